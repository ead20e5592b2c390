"""tether's test kit (fixtures, the contract check) is a pytest plugin a suite asks for."""

pytest_plugins = ["tether.testing"]  # tether's test kit: opt-in, never loaded on its own
