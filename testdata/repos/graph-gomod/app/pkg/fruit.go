package pkg

// Apple is one apple of the harvest.
type Apple struct{ grams int }

// Pick chooses the ripest of the apples in a basket.
func Pick(basket []Apple) Apple { return basket[0] }

// weigh returns an apple's weight in grams.
func weigh(a Apple) int { return a.grams }

// Total adds up what every apple of a basket weighs.
func Total(basket []Apple) int {
	n := 0
	for _, a := range basket {
		n += weigh(a)
	}
	return n
}
