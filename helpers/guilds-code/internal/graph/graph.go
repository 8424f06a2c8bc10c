package graph

import "sort"

// Names is a graph's index from symbol name to definitions; the store's name index implements it.
type Names interface {
	// Lookup returns the definitions stored under name, leaving out ids outside files.
	Lookup(name string, files []*File) []SymID
	// Each calls fn with every stored name.
	Each(fn func(name string))
}

// Graph is a repository's parsed files and the index of their names, which queries resolve over.
type Graph struct {
	Root  string  // absolute repository folder
	Files []*File // sorted by path
	Names Names   // the definitions of each name in Files; set before the first query
	idx   *index
}

// File returns the file with that repository-relative slash path, or nil.
func (g *Graph) File(rel string) *File {
	i := sort.Search(len(g.Files), func(i int) bool { return g.Files[i].Path >= rel })
	if i < len(g.Files) && g.Files[i].Path == rel {
		return g.Files[i]
	}
	return nil
}
