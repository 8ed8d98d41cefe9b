"""The instructor's powers on the hub, tried from the instructor's own login as a mischievous instructor would.

The instructor is no JupyterHub admin (hub/jupyterhub_config.py): a role of its own reads the course's users
and groups, nothing more. From the instructor's browser session (its cookie) and from an API token the
instructor minted for itself, each attempt to work as someone else is refused with the HTTP status the hub
gives for a missing permission, and the hub's database shows that nothing was created or started.
"""

import sqlite3
import time

import pytest

from conftest import URL, hub

STATE = hub.PREFIX / "state" / "jupyterhub.sqlite"
# The hub answers 404 where the instructor may not even learn that the thing exists (another user's servers and
# tokens), 403 where it may see the user but not act; either is a refusal, and the database is checked after.
REFUSED = (403, 404)


def log_in(page, user):
    """``user`` logged in through the hub's login page (their JupyterLab need not finish loading)."""
    page.goto(f"{URL}/hub/login")
    page.fill("#username_input", user)
    page.fill("#password_input", hub.password(user))
    page.click("#login_submit")
    page.wait_for_url(f"**/user/{user}/**", timeout=180_000)


def database():
    """The hub's users, their tokens and their running servers, as root reads them from its database."""
    with sqlite3.connect(f"file:{STATE}?mode=ro", uri=True) as db:
        users = {name for (name,) in db.execute("SELECT name FROM users")}
        tokens = sorted(db.execute("SELECT users.name, api_tokens.id FROM api_tokens "
                                   "JOIN users ON users.id = api_tokens.user_id"))
        servers = sorted(db.execute("SELECT users.name, spawners.name FROM spawners "
                                    "JOIN users ON users.id = spawners.user_id WHERE spawners.server_id IS NOT NULL"))
        admins = {name for (name,) in db.execute("SELECT name FROM users WHERE admin = 1")}
    return {"users": users, "tokens": tokens, "servers": servers, "admins": admins}


@pytest.fixture(scope="module")
def sessions(course, browser):
    """student1 logged in (their server running); the instructor logged in, with a token minted for itself."""
    student = browser.new_context()
    log_in(student.new_page(), "student1")
    context = browser.new_context()
    page = context.new_page()
    log_in(page, "instructor")
    page.goto(f"{URL}/hub/home")
    xsrf = page.evaluate("window.jhdata.xsrf_token")        # the hub's, as its own pages send it
    answer = page.request.post(f"{URL}/hub/api/users/instructor/tokens", headers={"X-XSRFToken": xsrf},
                               data={"note": "the instructor's own token, for the hostile test"})
    assert answer.status == 201, answer.text()
    bare = browser.new_context()                     # no cookie: the token alone speaks for the instructor
    yield {"cookie": (page.request, {"X-XSRFToken": xsrf}),
           "token": (bare.request, {"Authorization": f"token {answer.json()['token']}"}), "page": page}
    bare.close()
    context.close()
    student.close()


def attempt(sessions, credentials, method, path, data=None):
    """``method`` on ``path`` from the instructor's login (its cookie, or its own token); the answer's status."""
    request, headers = sessions[credentials]
    return request.fetch(f"{URL}{path}", method=method, headers=headers, data=data, max_redirects=0).status


def test_the_instructor_is_no_admin_and_reads_the_course_users(sessions):
    assert "instructor" not in database()["admins"]
    request, headers = sessions["token"]
    answer = request.get(f"{URL}/hub/api/users", headers=headers)
    assert answer.status == 200, answer.text()       # the token works: the refusals below are the role's doing
    assert {"student1", "student2", "student3"} <= {user["name"] for user in answer.json()}
    assert attempt(sessions, "cookie", "GET", "/hub/admin") == 403


@pytest.mark.parametrize("credentials", ["cookie", "token"])
def test_the_instructor_cannot_open_a_students_server(sessions, credentials):
    assert ("student1", "") in database()["servers"]
    assert attempt(sessions, credentials, "GET", "/user/student1/api/contents") == 403
    assert attempt(sessions, credentials, "GET", "/user/student1/api/terminals") == 403
    assert attempt(sessions, credentials, "GET", "/hub/api/users/student1/server/progress") == 404


def test_the_instructor_cannot_authorize_itself_into_a_students_lab(sessions):
    """The path one Authorize click took when the instructor was an admin: the hub refuses the OAuth grant."""
    page = sessions["page"]
    answer = page.goto(f"{URL}/user/student1/lab")
    assert answer.status == 403
    assert page.locator("#jp-main-dock-panel").count() == 0


@pytest.mark.parametrize("credentials", ["cookie", "token"])
def test_the_instructor_cannot_mint_or_read_a_students_tokens(sessions, credentials):
    before = database()
    assert attempt(sessions, credentials, "POST", "/hub/api/users/student2/tokens", {"note": "as student2"}) == 403
    assert attempt(sessions, credentials, "GET", "/hub/api/users/student2/tokens") == 404
    assert database()["tokens"] == before["tokens"]


@pytest.mark.parametrize("credentials", ["cookie", "token"])
def test_the_instructor_cannot_add_users_or_make_itself_admin(sessions, credentials):
    before = database()
    assert attempt(sessions, credentials, "POST", "/hub/api/users/intruder") == 403
    assert attempt(sessions, credentials, "POST", "/hub/api/users", {"usernames": ["root", "daemon"]}) == 403
    assert attempt(sessions, credentials, "PATCH", "/hub/api/users/instructor", {"admin": True}) == 403
    after = database()
    assert after["users"] == before["users"] and not {"intruder", "root", "daemon"} & after["users"]
    assert "instructor" not in after["admins"]


@pytest.mark.parametrize("credentials", ["cookie", "token"])
def test_the_instructor_cannot_start_or_stop_a_server_as_another_account(sessions, credentials):
    before = database()
    assert ("student3", "") not in before["servers"]
    assert attempt(sessions, credentials, "POST", "/hub/api/users/student3/server") == 404
    assert attempt(sessions, credentials, "POST", "/hub/api/users/student3/servers/extra") in REFUSED
    assert attempt(sessions, credentials, "DELETE", "/hub/api/users/student1/server") in REFUSED
    time.sleep(2)                                    # a spawn the hub had accepted would be recorded by now
    assert database()["servers"] == before["servers"]
