<?php
// Renders a page.
function render($title) {
    return wrap($title);
}

function wrap($s) {
    return "<h1>" . $s . "</h1>";
}

class Page {
    public function show() {
        return $this->body();
    }
    private function body() {
        return render("x");
    }
}
