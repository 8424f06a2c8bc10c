// Kotlin entry point.
class Robot {
    fun move() { step() }
    fun step() {}
}

fun main() {
    Robot().move()
}
