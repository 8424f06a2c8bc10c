package main

// helper is defined in another file of package main.
func helper() {}
