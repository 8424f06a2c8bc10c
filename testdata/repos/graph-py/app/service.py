from app.models import User, save
import app.models as m


def create(name):
    """Create and store a user."""
    u = User()
    u.save()
    save(u)
    m.save(u)
    return u


def walk(n):
    return walk(n - 1) if n else 0
