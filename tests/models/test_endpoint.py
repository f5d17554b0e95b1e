"""What a server's replies say, read in one line: an HTML page summarized by its title and first
words (never its markup, never over the limit), and a 2xx body told apart from a chat
completion (not JSON, an HTML page, JSON without choices)."""

from __future__ import annotations

import http.server

import pytest

from clstream.models.endpoint import completion_problem, html_summary, looks_like_html
from clstream.models.openai_compat import _reason

PYTHON_ERROR_PAGE = http.server.BaseHTTPRequestHandler.error_message_format % {
    "code": 501, "message": "Unsupported method ('POST')",
    "explain": "Server does not support this operation."}
NGINX_404 = ("<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n<center><h1>404 "
             "Not Found</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n"
             "</html>\r\n")


def test_an_html_page_is_its_title_and_first_words_once_each() -> None:
    assert html_summary(NGINX_404) == "404 Not Found; nginx/1.25.3"
    summary = html_summary(PYTHON_ERROR_PAGE)
    assert summary.startswith("Error response; Error code: 501; Message: Unsupported method "
                              "('POST').")
    assert len(summary) <= 100 and summary.endswith("...")


def test_scripts_styles_and_long_pages_stay_out_of_the_line() -> None:
    page = ("<!DOCTYPE html><html><head><title>Sign in</title><style>body{color:red}</style>"
            "<script>var secret = 1;</script></head><body>" + "word " * 5000 + "</body></html>")
    summary = html_summary(page)
    assert "color" not in summary and "secret" not in summary
    assert summary.startswith("Sign in; word word") and len(summary) <= 100
    assert html_summary("<html><body></body></html>") == "an HTML page"


@pytest.mark.parametrize(("body", "html"), [
    (NGINX_404, True), (PYTHON_ERROR_PAGE, True), ("  <!doctype html><p>x</p>", True),
    ('{"error": {"message": "<html> in a message"}}', False), ("Internal Server Error", False),
    ("<b>bold</b>", False)])
def test_html_is_told_by_its_opening(body: str, html: bool) -> None:
    assert looks_like_html(body) is html


def test_a_server_reason_summarizes_an_html_page_in_one_line() -> None:
    reason = _reason(404, NGINX_404, [])
    assert reason == "HTTP 404: HTML page: 404 Not Found; nginx/1.25.3"
    assert _reason(400, '{"error": {"message": "bad top_k"}}', []) == "HTTP 400: bad top_k"


@pytest.mark.parametrize(("body", "problem"), [
    (b'{"choices": [{"message": {"content": "OK"}}]}', None),
    (b'{"choices": []}', "JSON without choices"),
    (b'{"object": "list", "data": []}', "JSON without choices"),
    (b"[1, 2]", "JSON without choices"),
    (b"OK", "a body that is not JSON"),
    (NGINX_404.encode(), "an HTML page (404 Not Found; nginx/1.25.3)"),
])
def test_a_chat_completion_has_choices(body: bytes, problem: str | None) -> None:
    assert completion_problem(body) == problem
