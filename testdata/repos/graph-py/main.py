from app.service import create

if __name__ == "__main__":
    create("ada")
