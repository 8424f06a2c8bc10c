package webapp

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
)

// collectionRoutes registers Collections: an organisation's and a guild's typed tables, each
// defined, granted, and its records browsed and searched here.
func (a *App) collectionRoutes(r fiber.Router) {
	r.Get("/orgs/:id/collections", a.page(a.collections(orchestrator.ScopeOrg)))
	r.Post("/orgs/:id/collections", a.action(a.createCollection(orchestrator.ScopeOrg)))
	r.Get("/guilds/:id/collections", a.page(a.collections(orchestrator.ScopeGuild)))
	r.Post("/guilds/:id/collections", a.action(a.createCollection(orchestrator.ScopeGuild)))
	r.Get("/collections/:id", a.page(a.collection))
	r.Post("/collections/:id/grants", a.action(a.grantCollection))
}

// Column rows of the form that defines a collection: shown at first, added by "More columns", and
// the most the API takes.
const (
	columnRows    = 4
	moreColumns   = 4
	maxColumnRows = 64
)

// collectionsData is the Collections tab of an organisation or a guild.
type collectionsData struct {
	Place       place
	Collections []orchestrator.Collection
	Form        *form
	Rows        []int  // the column rows of the form, from 0
	More        string // the link that shows more column rows; "" at the most
	Types       []string
	Can         bool // may define one
}

// collectionsPath is the API's path of a place's collections.
func collectionsPath(scope, id string) string {
	if scope == orchestrator.ScopeGuild {
		return apiPath("guilds", id, "collections")
	}
	return apiPath("orgs", id, "collections")
}

func (a *App) collections(scope string) func(v *view) error {
	return func(v *view) error {
		rows, _ := strconv.Atoi(v.c.Query("columns"))
		return a.showCollections(v, scope, http.StatusOK, nil, rows)
	}
}

func (a *App) showCollections(v *view, scope string, status int, f *form, rows int) error {
	p, err := v.placeOf(scope, v.c.Params("id"))
	if err != nil {
		return err
	}
	var out struct {
		Collections []orchestrator.Collection `json:"collections"`
	}
	if err := v.get(collectionsPath(scope, p.ID()), &out); err != nil {
		return err
	}
	if f == nil {
		f = &form{Values: map[string]string{}, Errors: map[string]string{}}
	}
	rows = min(max(rows, columnRows), maxColumnRows)
	d := collectionsData{Place: p, Collections: out.Collections, Form: f, Types: orchestrator.ColumnTypes, Can: v.me.can(p.Chain(), orchestrator.RoleOperator)}
	for i := range rows {
		d.Rows = append(d.Rows, i)
	}
	if rows < maxColumnRows {
		d.More = p.Href() + "/collections?columns=" + strconv.Itoa(min(rows+moreColumns, maxColumnRows)) + "#define"
	}
	pd := v.at(p, "Collections", "Collections · "+p.Name(), d)
	return a.render(v.c, status, "collections", pd)
}

// columnField names a field of the n-th column row of the define form.
func columnField(n int, part string) string { return "col" + strconv.Itoa(n) + "_" + part }

// problemColumn reads the column index of one of ValidateCollection's problems ("columns[2]: ...").
var problemColumn = regexp.MustCompile(`^columns\[(\d+)\]`)

// createCollection defines a typed table at the place (POST /api/{orgs,guilds}/{id}/collections)
// from the rows of the form whose name is filled in, and opens it. The API's problems are shown
// each beside its own row.
func (a *App) createCollection(scope string) func(v *view) error {
	return func(v *view) error {
		rows, _ := strconv.Atoi(v.c.FormValue("rows"))
		rows = min(max(rows, columnRows), maxColumnRows)
		fields := []string{"name"}
		for i := range rows {
			fields = append(fields, columnField(i, "name"), columnField(i, "type"), columnField(i, "required"), columnField(i, "unique"))
		}
		f := newForm(v.c, fields...)
		var cols []orchestrator.Column
		var at []int // the form row of each column sent
		for i := range rows {
			name := strings.TrimSpace(f.Values[columnField(i, "name")])
			if name == "" {
				continue
			}
			cols = append(cols, orchestrator.Column{Name: name, Type: f.Values[columnField(i, "type")],
				Required: f.Values[columnField(i, "required")] == "on", Unique: f.Values[columnField(i, "unique")] == "on"})
			at = append(at, i)
		}
		if cols == nil {
			cols = []orchestrator.Column{}
		}
		var c orchestrator.Collection
		body := map[string]any{"name": strings.TrimSpace(f.Values["name"]), "columns": cols}
		if err := v.send(fiber.MethodPost, collectionsPath(scope, v.c.Params("id")), body, &c); err != nil {
			return a.refused(v, err, f, func(status int) error {
				placeProblems(f, messageOf(err), at)
				return a.showCollections(v, scope, status, f, rows)
			})
		}
		return v.seeOther("/collections/" + c.ID + "?done=created")
	}
}

// placeProblems puts each problem of a refused collection beside its own field: the name's beside
// the name, a column's beside its form row (columns[i] is the i-th row sent), any other above the
// form. A message that is not ValidateCollection's stays where form.fail put it.
func placeProblems(f *form, msg string, at []int) {
	rest, ok := strings.CutPrefix(msg, "collection rejected: ")
	if !ok {
		return
	}
	f.Errors, f.Error = map[string]string{}, ""
	var other []string
	add := func(k, p string) {
		if f.Errors[k] != "" {
			p = f.Errors[k] + "; " + p
		}
		f.Errors[k] = p
	}
	for _, p := range strings.Split(rest, "; ") {
		if m := problemColumn.FindStringSubmatch(p); m != nil {
			if i, err := strconv.Atoi(m[1]); err == nil && i < len(at) {
				add(columnField(at[i], "name"), fmt.Sprintf("column %d%s", at[i]+1, strings.TrimPrefix(p, m[0])))
				continue
			}
		}
		if strings.HasPrefix(p, "name ") {
			add("name", p)
			continue
		}
		other = append(other, p)
	}
	f.Error = strings.Join(other, "; ")
}

// grantRow is one grant of a collection, its grantee named.
type grantRow struct {
	Who, Access string
}

// grantee is one guild or agent a collection may be granted to.
type grantee struct {
	Value, Label string
}

// collectionData is one collection's page: its columns, its grants and the form that grants it,
// and a page of its records, searched.
type collectionData struct {
	Place    place
	Coll     orchestrator.Collection
	Grants   []grantRow
	Guilds   []grantee // an organisation table's guilds
	Agents   []grantee // the agents it may be granted to
	Grant    *form
	Accesses []string
	Records  []map[string]any
	Total    int
	Q        string
	From, To int    // the records shown, from 1
	Prev     string // the newer page's link
	Next     string // the older page's link
	Can      bool   // may grant it
}

// recordsPage is how many records a page shows.
const recordsPage = 50

// Cell is a record's value in a column, for people: a list joined, a boolean yes or no, a number
// as written.
func (d collectionData) Cell(rec map[string]any, col string) string {
	switch x := rec[col].(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		if x {
			return "yes"
		}
		return "no"
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case []any:
		parts := make([]string, len(x))
		for i, p := range x {
			parts[i] = fmt.Sprint(p)
		}
		return strings.Join(parts, ", ")
	}
	return fmt.Sprint(rec[col])
}

// Changed is when a record last changed, for people.
func (d collectionData) Changed(rec map[string]any) string {
	s, _ := rec["updated_at"].(string)
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return when(t)
}

func (a *App) collection(v *view) error { return a.showCollection(v, http.StatusOK, nil, "") }

func (a *App) showCollection(v *view, status int, grant *form, fail string) error {
	var c orchestrator.Collection
	if err := v.get(apiPath("collections", v.c.Params("id")), &c); err != nil {
		return err
	}
	var p place
	var err error
	if c.Level == orchestrator.LevelGuild {
		p, err = v.placeGuild(c.GuildID)
	} else {
		p, err = v.placeOrg(c.OrgID)
	}
	if err != nil {
		return err
	}
	d := collectionData{Place: p, Coll: c, Grant: grant, Accesses: []string{orchestrator.AccessRead, orchestrator.AccessWrite, orchestrator.AccessNone},
		Q: strings.TrimSpace(v.c.Query("q")), Can: v.me.can(p.Chain(), orchestrator.RoleOperator)}
	if d.Grant == nil {
		d.Grant = &form{Values: map[string]string{"access": orchestrator.AccessRead}, Errors: map[string]string{}}
	}
	names, err := v.grantees(&d)
	if err != nil {
		return err
	}
	for _, g := range c.Grants {
		who := "guild " + names[g.GuildID]
		if g.AgentID != "" {
			who = "agent " + names[g.AgentID]
		}
		d.Grants = append(d.Grants, grantRow{Who: who, Access: g.Access})
	}
	if err := v.records(&d); err != nil {
		return err
	}
	pd := v.at(p, "Collections", c.Name+" · Collections · "+p.Name(), d)
	pd.Heading = "Collection " + c.Name
	pd.Crumbs = append(pd.Crumbs, link{Label: p.Name(), Href: p.Href()}, link{Label: "Collections", Href: p.Href() + "/collections"})
	pd.Error = fail
	if fail == "" {
		pd.Notice = map[string]string{"created": "The collection is defined. Its guild's agents write it; grant it to give others access.",
			"granted": "The grant is saved: agents' next calls see it."}[v.c.Query("done")]
	}
	return a.render(v.c, status, "collection", pd)
}

// grantees reads the guilds and agents a collection may be granted to (an organisation table: its
// guilds and their agents; a guild table: the guild's agents) and returns every id's name.
func (v *view) grantees(d *collectionData) (map[string]string, error) {
	names := map[string]string{}
	guilds := []orchestrator.Guild{*orDefault(d.Place.Guild)}
	if d.Coll.Level == orchestrator.LevelOrg {
		var out struct {
			Guilds []orchestrator.Guild `json:"guilds"`
		}
		if err := v.get(apiPath("orgs", d.Coll.OrgID, "guilds"), &out); err != nil {
			return nil, err
		}
		guilds = out.Guilds
	}
	for _, g := range guilds {
		names[g.ID] = g.Name
		if d.Coll.Level == orchestrator.LevelOrg {
			d.Guilds = append(d.Guilds, grantee{Value: "guild:" + g.ID, Label: g.Name})
		}
		var out struct {
			Agents []orchestrator.Agent `json:"agents"`
		}
		if err := v.get(apiPath("guilds", g.ID, "agents"), &out); err != nil {
			return nil, err
		}
		for _, ag := range out.Agents {
			names[ag.ID] = ag.Name
			label := ag.Name
			if d.Coll.Level == orchestrator.LevelOrg {
				label += " (guild " + g.Name + ")"
			}
			d.Agents = append(d.Agents, grantee{Value: "agent:" + ag.ID, Label: label})
		}
	}
	return names, nil
}

// orDefault is *g, or the zero guild when g is nil.
func orDefault(g *orchestrator.Guild) *orchestrator.Guild {
	if g == nil {
		return &orchestrator.Guild{}
	}
	return g
}

// records reads the page of the collection's records the query asks for (GET
// /api/collections/{id}/records, with q, limit and offset).
func (v *view) records(d *collectionData) error {
	offset, _ := strconv.Atoi(v.c.Query("offset"))
	offset = max(offset, 0)
	q := url.Values{"limit": {strconv.Itoa(recordsPage)}, "offset": {strconv.Itoa(offset)}}
	if d.Q != "" {
		q.Set("q", d.Q)
	}
	var out struct {
		Total   int              `json:"total"`
		Records []map[string]any `json:"records"`
	}
	if err := v.get(apiPath("collections", d.Coll.ID, "records")+"?"+q.Encode(), &out); err != nil {
		return err
	}
	d.Records, d.Total = out.Records, out.Total
	if len(out.Records) > 0 {
		d.From, d.To = offset+1, offset+len(out.Records)
	}
	page := func(off int) string {
		p := url.Values{}
		if d.Q != "" {
			p.Set("q", d.Q)
		}
		if off > 0 {
			p.Set("offset", strconv.Itoa(off))
		}
		s := "/collections/" + d.Coll.ID
		if len(p) > 0 {
			s += "?" + p.Encode()
		}
		return s + "#records"
	}
	if offset > 0 {
		d.Prev = page(max(offset-recordsPage, 0))
	}
	if offset+len(out.Records) < out.Total {
		d.Next = page(offset + recordsPage)
	}
	return nil
}

// grantCollection grants the collection to a guild or an agent (PUT /api/collections/{id}/grants).
func (a *App) grantCollection(v *view) error {
	f := newForm(v.c, "to", "access")
	body := map[string]string{"access": f.Values["access"]}
	kind, id, _ := strings.Cut(f.Values["to"], ":")
	switch kind {
	case "guild":
		body["guild_id"] = id
	case "agent":
		body["agent_id"] = id
	}
	if err := v.send(fiber.MethodPut, apiPath("collections", v.c.Params("id"), "grants"), body, nil); err != nil {
		return a.refused(v, err, f, func(status int) error { return a.showCollection(v, status, f, "") })
	}
	return v.seeOther("/collections/" + v.c.Params("id") + "?done=granted#grants")
}
