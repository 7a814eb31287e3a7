pytest_plugins = ["tests.postgres_fixture"]
