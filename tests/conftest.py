"""Settings shared by the engine and web suites."""

import os

from hypothesis import settings

pytest_plugins = ["tests.chat_server"]

# Property tests check behaviour, not speed: a per-example deadline only measures how busy the
# machine is (CI shares two cores with the browser and the database), so it is off. Speed is
# proven by the scripts in benchmarks/.
settings.register_profile("suite", deadline=None)

# Under CI every run draws the same examples (a fixed seed per test, no example database), so a
# red run is red again on any machine with CI=true, and its failing example is printed as a
# blob that `@reproduce_failure` replays. New examples are what a developer's runs explore, so
# CI draws half as many for a property that does not set its own count: those take a third of
# the engine suite's time at the default 100, on the two cores CI shares with the databases.
settings.register_profile(
    "ci", settings.get_profile("suite"), derandomize=True, print_blob=True, max_examples=50
)

# CI=true (or 1/yes/on), as ./dev and CI services set it.
UNDER_CI = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes", "on"}
settings.load_profile("ci" if UNDER_CI else "suite")
