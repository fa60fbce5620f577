"""Settings shared by the engine and web suites."""

from hypothesis import settings

pytest_plugins = ["tests.chat_server"]

# Property tests check behaviour, not speed: a per-example deadline only measures how busy the
# machine is (CI shares two cores with the browser and the database), so it is off. Speed is
# proven by the scripts in benchmarks/.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")
