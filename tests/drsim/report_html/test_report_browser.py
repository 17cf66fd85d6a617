"""The HTML report in a real browser: headless Chromium (Debian's chromium and
chromium-driver, driven by Selenium) opens the run's and the sweep's report offline, the
figures draw without a console error, and a screenshot of each is kept as a test artefact
(in ``test-artifacts/``, or the folder ``DRSIM_TEST_ARTIFACTS`` names).

Where Chromium, its driver or Selenium is missing the test says so and is skipped, unless
``DRSIM_REQUIRE_BROWSER=1`` (set by CI, which installs them): then it fails.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from drsim.report_html.writing import write_html_report

ROOT = Path(__file__).resolve().parents[3]
CHROMIUM = ("chromium", "chromium-browser", "google-chrome")
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--disable-dev-shm-usage", "--window-size=1300,2400")
#: the figures that drew: a plotly div whose SVG holds at least one trace
DRAWN = """return Array.from(document.querySelectorAll('div.js-plotly-plot')).filter(
    d => d.querySelector('.main-svg .trace')).length"""


def _missing() -> str | None:
    """Why the browser test cannot run here (None: it can)."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "Selenium is not installed (pip install selenium)"
    if not any(shutil.which(name) for name in CHROMIUM):
        return "no Chromium (apt-get install chromium chromium-driver)"
    if not shutil.which("chromedriver"):
        return "no chromedriver (apt-get install chromium-driver)"
    return None


@pytest.fixture(scope="module")
def browser():
    missing = _missing()
    if missing:
        if os.environ.get("DRSIM_REQUIRE_BROWSER") == "1":
            pytest.fail(f"the browser test must run (DRSIM_REQUIRE_BROWSER=1): {missing}")
        pytest.skip(f"the browser test needs headless Chromium: {missing}")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = next(shutil.which(n) for n in CHROMIUM if shutil.which(n))
    profile = tempfile.mkdtemp(prefix="drsim-chromium-")
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _artefacts() -> Path:
    folder = Path(os.environ.get("DRSIM_TEST_ARTIFACTS", ROOT / "test-artifacts"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.mark.parametrize("kind, figures", [("run", 3), ("sweep", 4)])
def test_the_report_draws_its_figures_in_chromium_without_a_console_error(
        browser, run_folder, sweep_folder, tmp_path, kind, figures):
    page = write_html_report(run_folder if kind == "run" else sweep_folder,
                             tmp_path / f"{kind}.html")
    browser.get_log("browser")  # what an earlier page logged
    browser.get(page.as_uri())
    drawn = browser.execute_script(DRAWN)
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    shot = _artefacts() / f"html_report_{kind}.png"
    browser.save_screenshot(str(shot))
    print(f"screenshot: {shot}")
    assert errors == []
    assert drawn == figures
    assert shot.stat().st_size > 0
