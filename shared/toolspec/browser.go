package toolspec

import "time"

// BrowserCallTimeout bounds one browser tool call end to end.
const BrowserCallTimeout = 60 * time.Second

// BrowserNavigateArgs are browser_navigate's arguments.
type BrowserNavigateArgs struct {
	URL string `json:"url"`
}

// BrowserSnapshotArgs are browser_snapshot's arguments: none.
type BrowserSnapshotArgs struct{}

// BrowserClickArgs are browser_click's arguments.
type BrowserClickArgs struct {
	Locator string `json:"locator"`
}

// BrowserTypeArgs are browser_type's arguments.
type BrowserTypeArgs struct {
	Locator string `json:"locator"`
	Text    string `json:"text"`
}

// BrowserFillArgs are browser_fill's arguments; Value is a pointer because "" is a value.
type BrowserFillArgs struct {
	Locator string  `json:"locator"`
	Value   *string `json:"value"`
}

// BrowserScrollArgs are browser_scroll's arguments.
type BrowserScrollArgs struct {
	Direction string `json:"direction"`
	Target    string `json:"target,omitempty"`
}

// BrowserScreenshotArgs are browser_screenshot's arguments: none.
type BrowserScreenshotArgs struct{}

// BrowserEvalArgs are browser_eval's arguments.
type BrowserEvalArgs struct {
	Script string `json:"script"`
}

// locatorDoc describes every locator argument.
const locatorDoc = "An element from the latest browser_snapshot: its ref (e12) or role and name (button \"Save\")."

// Browser is the eight browser tools guilds-browser runs, in the spec's order.
var Browser = []Tool{
	{
		Name:        "browser_navigate",
		Description: "Open a URL (http, https, file, about or data) in the sandbox's browser and wait for it to load. Each browser call has a 60-second timeout.",
		Args:        BrowserNavigateArgs{},
		Props:       []Prop{{Name: "url", MinLength: 1, Doc: "Full URL, e.g. https://example.com"}},
	},
	{
		Name:        "browser_snapshot",
		Description: "The current page's accessibility tree, with a ref for each element; click, type and fill take locators from it.",
		Args:        BrowserSnapshotArgs{},
	},
	{
		Name:        "browser_click",
		Description: "Click an element of the page, named by a locator from the snapshot.",
		Args:        BrowserClickArgs{},
		Props:       []Prop{{Name: "locator", MinLength: 1, Doc: locatorDoc}},
	},
	{
		Name:        "browser_type",
		Description: "Type text at the end of a field, key by key, as a user would (use browser_fill to replace its value).",
		Args:        BrowserTypeArgs{},
		Props: []Prop{
			{Name: "locator", MinLength: 1, Doc: locatorDoc},
			{Name: "text", MinLength: 1, Doc: "The keys to type."},
		},
	},
	{
		Name:        "browser_fill",
		Description: "Set a field's whole value (\"\" empties it).",
		Args:        BrowserFillArgs{},
		Props: []Prop{
			{Name: "locator", MinLength: 1, Doc: locatorDoc},
			{Name: "value", Doc: "What the field should hold."},
		},
	},
	{
		Name:        "browser_scroll",
		Description: "Move one viewport up, down, left or right in a visible overflow panel when the page has one, otherwise the window; target picks the panel.",
		Args:        BrowserScrollArgs{},
		Props: []Prop{
			{Name: "direction", Enum: []string{"up", "down", "left", "right"}, Doc: "Where to scroll."},
			{Name: "target", Doc: "Locator of the panel to scroll (default: the page's visible overflow panel, else the window)."},
		},
	},
	{
		Name:        "browser_screenshot",
		Description: "Take a screenshot of the page; it is written to /home/agent/screenshots/latest.jpg.",
		Args:        BrowserScreenshotArgs{},
	},
	{
		Name:        "browser_eval",
		Description: "Run JavaScript in the current page as the body of an async function and return its JSON-serializable value (return document.title). Reuse a snippet by writing it to an agent note and reading it back with note_get.",
		Args:        BrowserEvalArgs{},
		Props:       []Prop{{Name: "script", MinLength: 1, Doc: "Async function body; use return for the value."}},
	},
}
