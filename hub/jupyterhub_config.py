"""JupyterHub of the attention course on one machine (copied to PREFIX/etc/ by ``hub/course.py setup``).

Local Unix users log in through the hub's login page (PAM). Each gets a JupyterLab started as that
user from the course's environment (PREFIX/venv, readable and executable by everyone, no grader in it).
The proxy is configurable-http-proxy from the npm registry, installed under PREFIX/proxy. Nothing here
reaches the network: the hub listens on 127.0.0.1 only.
"""

import os

c = get_config()  # noqa: F821 - provided by JupyterHub when it loads this file

PREFIX = os.environ.get("ATTNKIT_COURSE_PREFIX", "/opt/attnkit-course")
PORT = int(os.environ.get("ATTNKIT_HUB_PORT", "8000"))
USERS = os.environ.get("ATTNKIT_COURSE_USERS", "instructor student1 student2 student3").split()
INSTRUCTORS = os.environ.get("ATTNKIT_COURSE_INSTRUCTORS", "instructor").split()

c.JupyterHub.bind_url = f"http://127.0.0.1:{PORT}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = PORT + 81
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{PORT + 1}"
c.ConfigurableHTTPProxy.command = [f"{PREFIX}/proxy/node_modules/.bin/configurable-http-proxy"]
c.JupyterHub.db_url = f"sqlite:///{PREFIX}/state/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = f"{PREFIX}/state/jupyterhub_cookie_secret"
c.JupyterHub.pid_file = f"{PREFIX}/state/jupyterhub.pid"
# Stopping the hub stops every user's server (their files stay where they are).
c.JupyterHub.cleanup_servers = True

# PAM against the machine's accounts; only the course's users may log in: the demo course's and every
# student enrolled from a roster (hub/enrol.py puts them in this group, so a class needs no edit here).
# No PAM session: containers and CI machines have no logind to open one with.
c.JupyterHub.authenticator_class = "pam"
c.Authenticator.allowed_users = set(USERS)
c.PAMAuthenticator.allowed_groups = {"attnkit-students"}
c.PAMAuthenticator.open_sessions = False

# No one is the hub's admin: JupyterHub's admin role reaches every user's server (access:servers), mints
# tokens for anyone (tokens) and adds users (admin:users), so an instructor holding it could work as a
# student, under the student's own uid, and defeat the exchange's ownership check. The hub is administered
# from root's command line (hub/course.py). Naming the admin role's users (none) also takes the admin flag
# off whoever a hub set up before this file held it for.
# Instructors get one role of their own: read the course's users and groups (who is enrolled, who was
# active when), nothing else. Their grading runs in their own server (Formgrader, attnkit), which needs no
# hub permission; each user also keeps JupyterHub's default role (its own server and tokens, nobody else's).
c.JupyterHub.load_roles = [
    {"name": "admin", "users": []},
    {"name": "attnkit-instructor",
     "description": "Read the course's users and groups; no server, token or user of anyone else.",
     "scopes": ["list:users", "read:users", "list:groups", "read:groups"],
     "users": sorted(INSTRUCTORS)},
]

# One JupyterLab per user, started as that user, from the course's environment, in the user's home.
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [f"{PREFIX}/venv/bin/jupyterhub-singleuser"]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.start_timeout = 180          # a busy 2-core machine starts JupyterLab in 5-20 s
c.Spawner.http_timeout = 180


def user_path(spawner):
    """PATH of a user's server: the course's environment; the instructor also gets the course's tools."""
    tools = [f"{PREFIX}/bin"] if spawner.user.name in INSTRUCTORS else []
    return os.pathsep.join(tools + [f"{PREFIX}/venv/bin", "/usr/local/bin", "/usr/bin", "/bin"])


c.Spawner.environment = {"PATH": user_path}
