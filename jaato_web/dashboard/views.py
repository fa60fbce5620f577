"""Views for the dashboard pages."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def home(request: HttpRequest) -> HttpResponse:
    """Landing page: tells a first-time visitor what the product does and what is coming."""
    return render(request, "dashboard/home.html")
