// Package graph builds and queries the symbol graph behind code_map, code_find, code_outline and code_callers.
package graph
