"""What is stored, as the web lists and shows it: sessions and their message pages, runs
and their tool calls, usage statistics, and the registered repositories. Each reader
holds only the database (and, for repositories, the one domain step a delete needs);
every method is one request's reads in one transaction."""

from server.sessions.catalog.listing import Listing, SessionPage
from server.sessions.catalog.repos import Repos
from server.sessions.catalog.runs import Runs
from server.sessions.catalog.stats import Stats

__all__ = ["Listing", "Repos", "Runs", "SessionPage", "Stats"]
