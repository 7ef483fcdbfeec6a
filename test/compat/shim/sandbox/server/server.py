app = None  # the tests pass it to TestClient, which talks HTTP instead
