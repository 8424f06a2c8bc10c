package registry

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

const recordListSchema = `{
  "type": "object",
  "properties": {
    "collection": {"type": "string", "minLength": 1},
    "where": {"type": "object", "maxProperties": 8, "additionalProperties": {"anyOf": [
      {"type": "string"}, {"type": "number"}, {"type": "boolean"}, {"type": "null"},
      {"type": "object", "properties": {"gte": {}, "lte": {}}, "additionalProperties": false, "minProperties": 1}
    ]}},
    "since": {"type": "string", "format": "date-time"},
    "order": {"type": "object", "properties": {"column": {"type": "string"}, "direction": {"enum": ["asc", "desc"]}}, "required": ["column"], "additionalProperties": false},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100},
    "offset": {"type": "integer", "minimum": 0},
    "range": {"oneOf": [
      {"type": "object", "properties": {"from": {"type": "number"}, "to": {"type": "number"}}, "required": ["from", "to"]},
      {"type": "object", "properties": {"from": {"type": "string", "minLength": 10}}}
    ]},
    "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}, "maxItems": 3}
  },
  "required": ["collection"],
  "additionalProperties": false
}`

func TestValidateArgs(t *testing.T) {
	tests := []struct {
		name string
		args string
		want []string // nil: valid
	}{
		{"valid", `{"collection":"leads","where":{"stage":"won","amount":{"gte":10}},"order":{"column":"id"},"limit":100}`, nil},
		{"empty args are an empty object", ``, []string{"argument collection: required but missing"}},
		{"missing required", `{}`, []string{"argument collection: required but missing"}},
		{"not an object", `["leads"]`, []string{"arguments: got array, want object"}},
		{"null", `null`, []string{"arguments: got null, want object"}},
		{"not JSON", `{"collection":`, []string{"arguments: not valid JSON (unexpected EOF); send one JSON object"}},
		{"wrong type", `{"collection":7}`, []string{"argument collection: got number, want string"}},
		{"integer wanted", `{"collection":"x","limit":2.5}`, []string{"argument limit: got number, want integer"}},
		{"above maximum", `{"collection":"x","limit":500}`, []string{"argument limit: must be at most 100, got 500"}},
		{"below minimum", `{"collection":"x","offset":-1}`, []string{"argument offset: must be at least 0, got -1"}},
		{"too short", `{"collection":""}`, []string{"argument collection: must be at least 1 characters, got 0"}},
		{"unknown argument", `{"collection":"x","colection":"y"}`, []string{"argument colection: not an argument this tool takes; remove it"}},
		{"bad format", `{"collection":"x","since":"yesterday"}`, []string{"argument since: 'yesterday' is not valid date-time: less than 20 characters long"}},
		{"enum", `{"collection":"x","order":{"column":"id","direction":"up"}}`, []string{"argument order.direction: value must be one of 'asc', 'desc'"}},
		{"nested required and unknown", `{"collection":"x","order":{"dir":"asc"}}`, []string{
			"argument order.column: required but missing",
			"argument order.dir: not an argument this tool takes; remove it"}},
		{"array item", `{"collection":"x","tags":["ok","Not OK"]}`, []string{"argument tags[1]: 'Not OK' does not match pattern '^[a-z]+$'"}},
		{"too many items", `{"collection":"x","tags":["a","b","c","d"]}`, []string{"argument tags: must have at most 3 items, got 4"}},
		{"anyOf type mismatch merges the wanted types", `{"collection":"x","where":{"stage":["a"]}}`, []string{"argument where.stage: got array, want boolean, null, number, object or string"}},
		{"anyOf: the branch that took the type names its problem", `{"collection":"x","where":{"amount":{"gt":1}}}`, []string{
			"argument where.amount.gt: not an argument this tool takes; remove it"}},
		{"anyOf: two branches of that type are alternatives", `{"collection":"x","range":{"from":"a"}}`, []string{
			"argument range: matches none of the allowed forms (from: got string, want number, to: required but missing; or from: must be at least 10 characters, got 1)"}},
		{"too many where keys", `{"collection":"x","where":{"a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1,"h":1,"i":1}}`, []string{"argument where: must have at most 8 keys, got 9"}},
		{"every problem at once", `{"collection":1,"limit":0,"bogus":true}`, []string{
			"argument bogus: not an argument this tool takes; remove it",
			"argument collection: got number, want string",
			"argument limit: must be at least 1, got 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateArgs(json.RawMessage(recordListSchema), json.RawMessage(tt.args))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			var ae *ArgsError
			if !errors.As(err, &ae) {
				t.Fatalf("want *ArgsError, got %v", err)
			}
			if !reflect.DeepEqual(ae.Problems, tt.want) {
				t.Errorf("problems\n got %q\nwant %q", ae.Problems, tt.want)
			}
		})
	}
}

func TestValidateArgsBadSchema(t *testing.T) {
	err := ValidateArgs(json.RawMessage(`{"type":"object","properties":{"a":{"minimum":"one"}}}`), json.RawMessage(`{}`))
	var ae *ArgsError
	if err == nil || errors.As(err, &ae) {
		t.Fatalf("an invalid schema must be a plain error, got %v", err)
	}
}

func TestArgsErrorMessage(t *testing.T) {
	e := &ArgsError{Problems: []string{"argument a: x", "argument b: y"}}
	if got := e.Error(); got != "invalid arguments: argument a: x; argument b: y" {
		t.Errorf("Error() = %q", got)
	}
}
