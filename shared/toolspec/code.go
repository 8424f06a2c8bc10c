package toolspec

// Limits of the shell tools.
const (
	ShellDefaultTimeout = 120 // seconds a command runs when timeout_seconds is omitted
	ShellMaxTimeout     = 600 // the largest timeout_seconds
	ShellStatusLines    = 40  // how many of a background command's last log lines shell_status shows
)

// Limits of file_read.
const (
	FileReadDefaultLimit = 200 // lines returned when limit is omitted
	FileReadMaxLimit     = 500 // the largest limit
	FileReadMaxLineChars = 400 // longer lines are clipped
)

// Limits of code_search (the spec's "Code search" section).
const (
	CodeSearchFilesCap       = 30  // files mode lists at most this many files
	CodeSearchContentLineCap = 40  // content mode shows at most this many lines
	CodeSearchPerFileCap     = 10  // content mode shows at most this many matches of one file
	CodeSearchMaxContext     = 5   // content mode's largest context
	CodeSearchMaxLimit       = 40  // limit is 1 to this; it lowers a mode's cap and never raises it
	CodeSearchLineClip       = 300 // a shown line longer than this many characters is clipped
)

// Limits of code_match.
const (
	CodeMatchDefaultLimit = 30  // matches shown when limit is omitted
	CodeMatchMaxLimit     = 100 // the largest limit
)

// Limits of code_find.
const (
	CodeFindDefaultLimit = 8  // results when limit is omitted
	CodeFindMaxLimit     = 20 // the largest limit
)

// Limits of code_callers.
const (
	CodeCallersDefaultDepth = 1 // levels followed when depth is omitted
	CodeCallersMaxDepth     = 3 // the largest depth
)

// ShellArgs are shell's arguments.
type ShellArgs struct {
	Command        *string `json:"command"`
	TimeoutSeconds *int    `json:"timeout_seconds,omitempty"`
	Background     *bool   `json:"background,omitempty"`
}

// ShellStatusArgs are shell_status's arguments.
type ShellStatusArgs struct {
	ID   *string `json:"id,omitempty"`
	Stop *bool   `json:"stop,omitempty"`
}

// FileReadArgs are file_read's arguments.
type FileReadArgs struct {
	Path   string `json:"path"`
	Offset *int   `json:"offset,omitempty"`
	Limit  *int   `json:"limit,omitempty"`
}

// FileEditArgs are file_edit's arguments.
type FileEditArgs struct {
	Path       string  `json:"path"`
	OldString  *string `json:"old_string"`
	NewString  *string `json:"new_string"`
	ReplaceAll bool    `json:"replace_all,omitempty"`
}

// FileWriteArgs are file_write's arguments.
type FileWriteArgs struct {
	Path    string  `json:"path"`
	Content *string `json:"content"`
}

// CodeSearchArgs are code_search's arguments.
//
// limit (1 to 40) lowers the mode's cap and never raises it: files mode lists at most
// min(limit, 30) files, content mode shows at most min(limit, 40) lines; the cap of 10
// matches per file stays. Matches are counted as matching lines.
type CodeSearchArgs struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path,omitempty"`
	Glob       string `json:"glob,omitempty"`
	Mode       string `json:"mode,omitempty"`
	Fixed      bool   `json:"fixed,omitempty"`
	IgnoreCase bool   `json:"ignore_case,omitempty"`
	Context    int    `json:"context,omitempty"`
	Limit      *int   `json:"limit,omitempty"`
}

// CodeMatchArgs are code_match's arguments.
type CodeMatchArgs struct {
	Pattern string `json:"pattern"`
	Lang    string `json:"lang,omitempty"`
	Path    string `json:"path,omitempty"`
	Limit   *int   `json:"limit,omitempty"`
}

// CodeMapArgs are code_map's arguments.
type CodeMapArgs struct {
	Repo string `json:"repo,omitempty"`
}

// CodeFindArgs are code_find's arguments.
type CodeFindArgs struct {
	Question string `json:"question"`
	In       string `json:"in,omitempty"`
	Source   bool   `json:"source,omitempty"`
	Limit    *int   `json:"limit,omitempty"`
}

// CodeOutlineArgs are code_outline's arguments.
type CodeOutlineArgs struct {
	Path string `json:"path"`
}

// CodeCallersArgs are code_callers's arguments.
type CodeCallersArgs struct {
	Symbol    string `json:"symbol"`
	Direction string `json:"direction,omitempty"`
	Depth     *int   `json:"depth,omitempty"`
	In        string `json:"in,omitempty"`
}

// Code is the eleven code tools guilds-code runs, in the spec's order.
var Code = []Tool{
	{
		Name: "shell",
		Description: "Run a bash command in your workspace (stdin closed, environment changes do not persist; a cd does). " +
			"Returns combined stdout and stderr, shaped: output past the cap keeps its first 2 KiB and last 6 KiB around a line naming the full log under /home/agent/.runs/. " +
			"Adds exit_code: N when not 0. A command past timeout_seconds is stopped with exit_code 124. With background: true it runs on in its own session; check it with shell_status.",
		Args: ShellArgs{},
		Props: []Prop{
			{Name: "command", MinLength: 1, Doc: "The bash command line to run."},
			{Name: "timeout_seconds", Range: &Range{Min: 1, Max: ShellMaxTimeout}, Doc: "Seconds before the command is stopped (default 120, at most 600)."},
			{Name: "background", Doc: "Run in the background and return its id (b1, b2, …) at once."},
		},
	},
	{
		Name:        "shell_status",
		Description: "Without id: the background commands with their state. With id: that command's state, exit code and the last 40 lines of its log; stop: true ends it.",
		Args:        ShellStatusArgs{},
		Props: []Prop{
			{Name: "id", Doc: "A background command id such as b1."},
			{Name: "stop", Doc: "End the command named by id."},
		},
	},
	{
		Name: "file_read",
		Description: "Read numbered lines of a file under /home/agent, under a 'lines a–b of n' header. Lines longer than 400 characters are clipped; a binary file is named with its size. " +
			"A range you already read unchanged in this run returns one line pointing at that earlier result.",
		Args: FileReadArgs{},
		Props: []Prop{
			{Name: "path", MinLength: 1, Doc: "File path, relative to the working directory or absolute under /home/agent."},
			{Name: "offset", Range: &Range{Min: 1}, Doc: "First line to return (default 1)."},
			{Name: "limit", Range: &Range{Min: 1, Max: FileReadMaxLimit}, Doc: "Number of lines (default 200, at most 500)."},
		},
	},
	{
		Name:        "file_edit",
		Description: "Replace an exact string in a file, atomically, keeping its mode. A string that is missing, or occurs more than once without replace_all, is an error and changes nothing. Returns edited <path> (+a −b).",
		Args:        FileEditArgs{},
		Props: []Prop{
			{Name: "path", MinLength: 1, Doc: "File to edit."},
			{Name: "old_string", Doc: "The exact text to replace, with enough context to be unique."},
			{Name: "new_string", Doc: "The replacement text."},
			{Name: "replace_all", Doc: "Replace every occurrence."},
		},
	},
	{
		Name:        "file_write",
		Description: "Create or replace a file with content, atomically; missing folders are created and an existing file keeps its mode. Returns wrote <path> (n lines).",
		Args:        FileWriteArgs{},
		Props: []Prop{
			{Name: "path", MinLength: 1, Doc: "File to write."},
			{Name: "content", Doc: "The whole new content of the file."},
		},
	},
	{
		Name: "code_search",
		Description: "Text search with ripgrep (respects .gitignore), or symbols mode over the code graph. Modes: files (default: matching paths with counts, at most 30), " +
			"content (path:line: text, context 0 to 5 lines, at most 40 lines, 10 matches per file), symbols (hits grouped under their enclosing function or class). Paths are relative to the working directory.",
		Args: CodeSearchArgs{},
		Props: []Prop{
			{Name: "pattern", MinLength: 1, Doc: "Regular expression (or literal text with fixed)."},
			{Name: "path", Doc: "Folder or file to search (default the working directory)."},
			{Name: "glob", Doc: "Only files matching this glob, e.g. *.go."},
			{Name: "mode", Enum: []string{"files", "content", "symbols"}, Doc: "files (default), content or symbols."},
			{Name: "fixed", Doc: "Treat pattern as literal text."},
			{Name: "ignore_case", Doc: "Match case-insensitively."},
			{Name: "context", Range: &Range{Min: 0, Max: CodeSearchMaxContext}, Doc: "Context lines around each match in content mode (0 to 5)."},
			{Name: "limit", Range: &Range{Min: 1, Max: CodeSearchMaxLimit}, Doc: "Show fewer files or lines than the mode's cap (1 to 40)."},
		},
	},
	{
		Name:        "code_match",
		Description: "Structural search with ast-grep: a syntax pattern (a call shape, a declaration form) that never matches inside comments or strings, e.g. fmt.Errorf($$$ARGS). Returns path:line: first matched line.",
		Args:        CodeMatchArgs{},
		Props: []Prop{
			{Name: "pattern", MinLength: 1, Doc: "Code pattern; $NAME matches one node, $$$NAME any number."},
			{Name: "lang", Doc: "Language of the pattern (default: from each file's extension)."},
			{Name: "path", Doc: "Folder or file to search (default the working directory)."},
			{Name: "limit", Range: &Range{Min: 1, Max: CodeMatchMaxLimit}, Doc: "Matches to show (default 30, at most 100)."},
		},
	},
	{
		Name:        "code_map",
		Description: "Map of a repository under /home/agent/repos: directory clusters with file and symbol counts and their most referenced symbols, then the most referenced symbols overall. A first graph build can take minutes.",
		Args:        CodeMapArgs{},
		Props: []Prop{
			{Name: "repo", Doc: "Repository folder name under /home/agent/repos (default: the one holding the working directory, else the only one)."},
		},
	},
	{
		Name:        "code_find",
		Description: "Find the symbols and files that answer a question, ranked, with path:line and their signature; with source, up to 8 lines of each.",
		Args:        CodeFindArgs{},
		Props: []Prop{
			{Name: "question", MinLength: 1, Doc: "What you are looking for, in words or identifiers."},
			{Name: "in", Doc: "Narrow to a folder or file of the repository."},
			{Name: "source", Doc: "Include up to 8 lines of each symbol's source."},
			{Name: "limit", Range: &Range{Min: 1, Max: CodeFindMaxLimit}, Doc: "Results (default 8, at most 20)."},
		},
	},
	{
		Name:        "code_outline",
		Description: "Every signature in a file with its line span, without bodies.",
		Args:        CodeOutlineArgs{},
		Props: []Prop{
			{Name: "path", MinLength: 1, Doc: "File to outline."},
		},
	},
	{
		Name:        "code_callers",
		Description: "What references a symbol (direction in) or what it references (direction out), indented by depth, with path:line.",
		Args:        CodeCallersArgs{},
		Props: []Prop{
			{Name: "symbol", MinLength: 1, Doc: "Function, method or type name (Type.Method for a method)."},
			{Name: "direction", Enum: []string{"in", "out"}, Doc: "in (default): its callers; out: what it calls."},
			{Name: "depth", Range: &Range{Min: 1, Max: CodeCallersMaxDepth}, Doc: "Levels to follow (1 to 3, default 1)."},
			{Name: "in", Doc: "Narrow to a folder or file of the repository."},
		},
	},
}
