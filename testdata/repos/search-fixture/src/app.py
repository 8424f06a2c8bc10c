"""print("in a docstring") is not a call."""

# print("in a comment") is not a call either


def main(needle):
    print("needle:", needle)
    return print
