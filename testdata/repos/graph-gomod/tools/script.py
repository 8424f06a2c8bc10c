class Box:
    def get(self):
        return 1

class Bag:
    def get(self):
        return 2

def use():
    d = dict()
    d.get("k")
    b = Box()
    b.get()
