/// A shape with an area.
pub trait Shape {
    fn area(&self) -> f64;
}

pub struct Square {
    side: f64,
}

impl Square {
    pub fn new(side: f64) -> Self {
        Square { side }
    }
}

impl Shape for Square {
    fn area(&self) -> f64 {
        self.side * self.side
    }
}

pub fn total(shapes: &[Square]) -> f64 {
    shapes.iter().map(|s| s.area()).sum()
}

fn main() {
    let s = Square::new(2.0);
    println!("{}", total(&[s]));
}
