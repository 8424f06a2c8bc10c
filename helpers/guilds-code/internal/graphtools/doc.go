// Package graphtools answers code_map, code_find, code_outline and code_callers, and groups
// code_search's symbols-mode hits, over the symbol graph of a repository under repos/.
//
// A call names its repository (repo, or a path inside one, else the working directory's, else the
// only one), brings its graph up to date within Budget (store.Open), and renders the answer from
// the graph's files, symbols and resolved call sites, with notes on what the graph lacks.
package graphtools
