"""A record of what a page in the browser complained about."""

from __future__ import annotations

from dataclasses import dataclass, field

from playwright.sync_api import ConsoleMessage, Error, Response


@dataclass
class PageLog:
    """What the page printed to its console, threw, or failed to load."""

    console: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    bad_responses: list[str] = field(default_factory=list)

    def on_console(self, message: ConsoleMessage) -> None:
        self.console.append(f"{message.type}: {message.text}")

    def on_page_error(self, error: Error) -> None:
        self.errors.append(str(error))

    def on_response(self, response: Response) -> None:
        if response.status >= 400:
            self.bad_responses.append(f"{response.status} {response.url}")

    def console_errors(self) -> list[str]:
        return [line for line in self.console if line.startswith("error: ")]

    def csp_violations(self) -> list[str]:
        return [line for line in self.console if "Content Security Policy" in line]
