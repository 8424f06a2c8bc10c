"""Models of the app."""


class User:
    """A user account."""

    def save(self):
        """Persist the user."""
        self.validate()
        return save(self)

    def validate(self):
        return True


def save(record):
    """Save any record: a function named like User.save."""
    return record
