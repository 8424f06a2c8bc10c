package webapp

import (
	"html"
	"html/template"
	"strings"
)

// toolRowHTML renders one tool or server of the Tools view with its control and its resolved state
// (a server's own row when server is set). The view holds a row per native tool and listed tool, so
// it is written here rather than by the template engine, whose reflection and escaping per action
// made the view several times slower than the API reads it is made of; every value is escaped.
func toolRowHTML(t toolRow, d toolsData, csrf string, server bool) template.HTML {
	e := html.EscapeString
	var b strings.Builder
	b.Grow(1024)
	b.WriteString("\n<div class=\"tool\" id=\"" + e(t.Field) + "\">\n  <span class=\"name\" id=\"" + e(t.Field) + "-n\">")
	if server {
		b.WriteString("Server")
	} else {
		b.WriteString(e(t.Name))
	}
	b.WriteString("</span>")
	if d.Can && t.Binding {
		act := e(d.Action)
		b.WriteString("\n  <form method=\"post\" action=\"" + act + "\" hx-post=\"" + act + "\" hx-trigger=\"change\" hx-target=\"#tools\" hx-select=\"#tools\" hx-swap=\"outerHTML\" hx-select-oob=\"#notice\">")
		b.WriteString("\n    <input type=\"hidden\" name=\"csrf_token\" value=\"" + e(csrf) + "\">")
		b.WriteString("\n    <input type=\"hidden\" name=\"kind\" value=\"" + e(t.Kind) + "\">")
		b.WriteString("\n    <input type=\"hidden\" name=\"catalog_id\" value=\"" + e(t.ID) + "\">")
		b.WriteString("\n    <fieldset class=\"tri\" role=\"radiogroup\" aria-label=\"" + e(t.Name) + "\">\n      <legend>" + e(t.Name) + "</legend>")
		for _, c := range t.Choices() {
			b.WriteString("\n      <label><input type=\"radio\" id=\"" + e(t.Field) + "-" + c.Value + "\" name=\"state\" value=\"" + c.Value + "\"")
			if c.Checked {
				b.WriteString(" checked")
			}
			b.WriteString(">" + c.Label + "</label>")
		}
		b.WriteString("\n    </fieldset>\n    <button type=\"submit\" class=\"quiet nojs\">Save</button>\n  </form>")
	} else {
		b.WriteString("\n  <span class=\"small muted\">")
		if t.Binding {
			b.WriteString(e(titleCase(t.Control)) + " here")
		} else {
			b.WriteString(e(t.Rule))
		}
		b.WriteString("</span>")
	}
	b.WriteString("\n  <span class=\"why\">")
	if t.Binding {
		switch {
		case t.On && t.Ask:
			b.WriteString(`<span class="state-ask">Ask</span>`)
		case t.On:
			b.WriteString(`<span class="state-on">On</span>`)
		default:
			b.WriteString(`<span class="state-off">Off</span>`)
		}
		if t.From != "" {
			b.WriteString(", from " + e(t.From))
		} else {
			b.WriteString(", no binding turns it on")
		}
	}
	if d.Agent && !server {
		if t.Binding {
			b.WriteString(" · ")
		}
		if t.Offered {
			b.WriteString(`<span class="state-on">Offered</span>`)
		} else {
			b.WriteString(`<span class="state-off">Not offered</span>`)
		}
	}
	if t.Why != "" {
		b.WriteString(" · " + e(t.Why))
	}
	if t.Test != "" {
		b.WriteString(" <a class=\"button quiet\" href=\"" + e(t.Test) + "\" aria-describedby=\"" + e(t.Field) + "-n\">Test</a>")
	}
	b.WriteString("</span>\n</div>")
	return template.HTML(b.String()) //nolint:gosec // every value above is escaped
}
