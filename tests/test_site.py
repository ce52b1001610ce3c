"""The built book as a reader meets it: offline, in a real browser.

Each page of the built site is opened in headless Chromium with every network name
unresolvable (anything fetched from the internet fails, as it would offline), and the
page itself is checked through its DOM: math typeset by MathJax, every image loaded, no
directive or TeX source showing as text, no widget left unrendered, code that fits the
column without a scroll bar, no failed resource and no script error. A screenshot of
each page goes to ``_build/screenshots/`` for a person to look at. Another test checks
every internal link of the site (pages, anchors, cross-references, the bibliography)
with pytest-check-links, offline.

The site is the one ``python3 tasks.py test`` builds from the chapters it executed
(``ICLR26_SITE`` names its HTML folder). Needs Debian's ``chromium`` and
``chromium-driver``: ``.ci/run`` installs them; elsewhere the browser test skips with a
message, except under CI, where a missing browser fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.site

ROOT = Path(__file__).resolve().parents[1]
SITE = Path(os.environ.get("ICLR26_SITE", ROOT / "_build" / "html"))
SHOTS = ROOT / "_build" / "screenshots"
# The repository the Colab links must point at, as _config.yml sets it.
CONFIG = (ROOT / "_config.yml").read_text()
REPO = re.search(
    r"^repository:\s*\n(?:\s+.*\n)*?\s+url:\s*https://github\.com/(\S+)", CONFIG, re.M
).group(1)
RELEASE = re.search(
    r"^repository:\s*\n(?:\s+.*\n)*?\s+release:\s*(\S+)", CONFIG, re.M
).group(1)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
WIDTH, HEIGHT = 1280, 1600  # a laptop's width: 88 columns of code must fit here
# Text that means a directive or role was not parsed (it would show as source).
RAW_MARKUP = [
    "```{",
    "{prf:",
    "{exercise}",
    "{solution}",
    ":label:",
    "{cite:",
    "{ref}`",
    "{numref}`",
    "{eq}`",
    "{math}`",
    ":class: dropdown",
]
# Script errors that are known and harmless: sphinx-thebe writes its configuration
# script twice under Jupyter Book 1.x (the second `const` fails; thebe itself is off).
KNOWN_SCRIPT_ERRORS = ["Identifier 'THEBE_JS_URL' has already been declared"]


def site_pages() -> list[Path]:
    if not SITE.is_dir():
        return []
    pages = [SITE / "book" / "intro.html"]
    for folder in ("book", "book/planned", "notebooks"):
        pages += sorted((SITE / folder).glob("*.html"))
    return list(dict.fromkeys(pages))


def need_site():
    if not (SITE / "book" / "intro.html").is_file():
        pytest.skip(
            f"no built site at {SITE}: `python3 tasks.py test` builds it from the "
            "executed chapters before this test (or set ICLR26_SITE)"
        )


@pytest.fixture(scope="module")
def browser():
    need_site()
    if not (CHROMIUM and CHROMEDRIVER):
        message = (
            "headless Chromium is not installed: `apt-get install chromium "
            "chromium-driver` (Debian's packages; .ci/run installs them)"
        )
        if os.environ.get("CI"):
            pytest.fail(message + " -- under CI the browser test must not skip")
        pytest.skip(message)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--window-size={WIDTH},{HEIGHT}",
        # Offline: every host name fails to resolve, so a resource from the internet
        # fails to load and shows up in the browser's log.
        "--host-resolver-rules=MAP * ~NOTFOUND",
        # pytest-xdist workers or a second run must not share a profile.
        f"--user-data-dir={SHOTS.parent / f'chromium-profile-{os.getpid()}'}",
    ]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    driver.set_script_timeout(60)
    SHOTS.mkdir(parents=True, exist_ok=True)
    yield driver
    driver.quit()


# The visible prose of an element: its text outside code, scripts and typeset math.
VISIBLE_PROSE = r"""
function visibleProse(root) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: n => n.parentElement.closest(
      "pre, code, script, style, mjx-container, .highlight, .jp-InputArea-editor") ?
      NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT});
  let prose = "";
  while (walker.nextNode()) prose += walker.currentNode.textContent + " ";
  return prose;
}
"""

# Waits for MathJax (on pages that load it) and for every image, then reads the page.
INSPECT = (
    VISIBLE_PROSE
    + r"""
const done = arguments[arguments.length - 1];
const images = Array.from(document.images).map(img => img.complete ? null :
    new Promise(ok => { img.onload = img.onerror = ok; }));
const math = (window.MathJax && MathJax.startup && MathJax.startup.promise)
    ? MathJax.startup.promise : Promise.resolve();
Promise.all([math, ...images]).then(() => {
  const article = document.querySelector("main article") || document.body;
  const prose = visibleProse(article);
  const cells = Array.from(article.querySelectorAll("div.cell"));
  done({
    prose: prose,
    mathElements: article.querySelectorAll(".math").length,
    untypeset: Array.from(article.querySelectorAll(".math"))
        .filter(m => !m.querySelector("mjx-container")).length,
    mathErrors: article.querySelectorAll("mjx-merror").length,
    brokenImages: Array.from(document.images)
        .filter(i => !(i.complete && i.naturalWidth > 0))
        .map(i => i.getAttribute("src").slice(0, 80)),
    outputImages: article.querySelectorAll(".cell_output img").length,
    // "Fig. 6.2", "Exercise 6.1", "Theorem 6.1", and the title's "6." itself.
    numbers: Array.from(article.querySelectorAll(".caption-number, h1 .section-number"))
        .map(e => e.textContent.trim()),
    // The chapter's Colab link and the theme's launch button, anywhere on the page.
    colabLinks: Array.from(
        document.querySelectorAll('a[href*="colab.research.google"]'))
        .map(a => a.getAttribute("href")),
    // A figure is numbered within its chapter ("Fig. 6.2") when its cell carries a
    // caption (cell metadata mystnb.figure). myst-nb puts every displayed output of
    // such a cell in the figure, so a cell that also displays a table or a claim's
    // verdict is left without a number (18 cells of the first 14 chapters).
    unnumberedFigures: Array.from(article.querySelectorAll(".cell_output img"))
        .filter(i => !(i.closest("figure") &&
                       i.closest("figure").querySelector(".caption-number")))
        .filter(i => !Array.from(i.closest(".cell_output").children).some(c =>
            !(c.tagName === "IMG" || c.tagName === "FIGURE" ||
              c.matches(".output.stream")))).length,
    widgets: article.querySelectorAll(
        'script[type="application/vnd.jupyter.widget-view+json"], ' +
        ".jupyter-widgets, .widget-area").length,
    // Code a reader reads: cell inputs and code blocks in the prose, not outputs.
    wideCode: Array.from(article.querySelectorAll("div.highlight pre"))
        .filter(p => !p.closest(".cell_output"))
        // Folded code (a widget's, under hide-input) is measured in its folded box.
        .filter(p => !p.closest(".tag_hide-input"))
        .filter(p => p.scrollWidth > p.clientWidth + 1)
        .map(p => p.textContent.split("\n")
                  .reduce((a, b) => b.length > a.length ? b : a)),
    // Every table and every text output must fit the column (no sideways scroll).
    column: article.clientWidth,
    wideTables: Array.from(article.querySelectorAll("table"))
        .map(t => ({w: Math.max(t.scrollWidth, t.getBoundingClientRect().width),
                    box: (t.closest(".pst-scrollable-table-container") ||
                          t.parentElement).clientWidth,
                    text: t.textContent.trim().slice(0, 60)}))
        .filter(t => t.w > t.box + 1),
    widestTable: Math.max(0, ...Array.from(article.querySelectorAll("table"))
        .map(t => t.scrollWidth)),
    wideOutputs: Array.from(article.querySelectorAll(".cell_output pre"))
        .filter(p => p.scrollWidth > p.clientWidth + 1)
        .map(p => ({w: p.scrollWidth, box: p.clientWidth,
                    text: p.textContent.trim().slice(0, 60)})),
    widestOutput: Math.max(0, ...Array.from(
        article.querySelectorAll(".cell_output pre")).map(p => p.scrollWidth)),
    widgetsWithoutFigure: cells.filter((c, i) =>
        c.classList.contains("tag_skip-execution") &&
        !(i > 0 && cells[i - 1].querySelector(".cell_output img"))).length,
  });
}).catch(e => done({error: String(e)}));
"""
)


def page_id(path: Path) -> str:
    return path.relative_to(SITE).with_suffix("").as_posix().replace("/", "-")


@pytest.mark.parametrize("page", site_pages() or [None], ids=lambda p: p and page_id(p))
def test_page_in_a_browser(browser, page):
    need_site()
    browser.get_log("browser")  # drop what earlier pages left
    browser.get(page.as_uri())
    seen = browser.execute_async_script(INSPECT)
    browser.save_screenshot(str(SHOTS / f"{page_id(page)}.png"))
    log = browser.get_log("browser")
    assert "error" not in seen, seen
    problems = []
    failed = [e["message"] for e in log if e.get("source") == "network"]
    if failed:
        problems.append(f"resources that did not load (offline): {failed}")
    errors = [
        e["message"]
        for e in log
        if e.get("source") == "javascript"
        and not any(k in e["message"] for k in KNOWN_SCRIPT_ERRORS)
    ]
    if errors:
        problems.append(f"script errors: {errors}")
    if seen["untypeset"] or seen["mathErrors"]:
        problems.append(
            f"math not typeset: {seen['untypeset']} of {seen['mathElements']} "
            f"formulas, {seen['mathErrors']} MathJax errors"
        )
    tex = [t for t in ("\\(", "\\[", "$$", "\\frac", "\\mathbb") if t in seen["prose"]]
    if tex:
        problems.append(f"TeX source showing as text: {tex}")
    raw = [t for t in RAW_MARKUP if t in seen["prose"]]
    if raw:
        problems.append(f"directive or role source showing as text: {raw}")
    if seen["brokenImages"]:
        problems.append(f"images that did not load: {seen['brokenImages']}")
    if seen["widgets"]:
        problems.append(
            f"{seen['widgets']} widget placeholders a static page cannot run"
        )
    if seen["wideCode"]:
        problems.append(f"code wider than the column: {seen['wideCode'][:5]}")
    if seen["wideTables"]:
        problems.append(
            f"{len(seen['wideTables'])} tables wider than the column: "
            f"{seen['wideTables'][:3]}"
        )
    if seen["wideOutputs"]:
        problems.append(
            f"{len(seen['wideOutputs'])} text outputs wider than their box: "
            f"{seen['wideOutputs'][:3]}"
        )
    # what a person reads in a closing note: the widest table and output, in px
    widths = SHOTS.parent / "site-widths"
    widths.mkdir(parents=True, exist_ok=True)
    (widths / f"{page_id(page)}.json").write_text(
        json.dumps(
            {
                "column": seen["column"],
                "widest_table": seen["widestTable"],
                "widest_output": seen["widestOutput"],
            }
        )
    )
    if page.parent.name == "notebooks":
        want = (
            f"https://colab.research.google.com/github/{REPO}/blob/{RELEASE}/colab/"
            f"{page.stem}.ipynb"
        )
        if seen["colabLinks"] != [want]:
            problems.append(
                f"one Colab link, to the chapter's Colab copy {want}, found "
                f"{seen['colabLinks']}"
            )
        chapter = int(page.stem[:2])
        wrong = [n for n in seen["numbers"] if not re.search(rf"\b{chapter}\.", n)]
        if wrong or not seen["numbers"]:
            problems.append(
                f"numbers that are not chapter {chapter}'s: {wrong or 'none at all'}"
            )
        if seen["outputImages"] == 0:
            problems.append("a chapter without a single figure: was it executed?")
        if seen["unnumberedFigures"]:
            problems.append(
                f"{seen['unnumberedFigures']} figures without a caption and number "
                "(give the cell mystnb.figure metadata: caption and name)"
            )
        if seen["widgetsWithoutFigure"]:
            problems.append("a widget cell without a default figure drawn before it")
    assert not problems, f"{page.relative_to(SITE)}:\n" + "\n".join(problems)


def test_search_works_offline(browser):
    need_site()
    browser.get((SITE / "search.html").as_uri() + "?q=gradient")
    found = browser.execute_async_script(
        """const done = arguments[arguments.length - 1];
        const t0 = Date.now();
        (function poll() {
          const n = document.querySelectorAll("#search-results li").length;
          if (n > 0 || Date.now() - t0 > 20000) done(n); else setTimeout(poll, 200);
        })();"""
    )
    browser.save_screenshot(str(SHOTS / "search.png"))
    assert found > 0, "searching the built site for 'gradient' found nothing"


def test_internal_links():
    """Every link, anchor, cross-reference, bibliography entry and image that a page of
    the site points at inside the site exists (pytest-check-links; links to the
    internet are not followed: the site must work offline, they cannot be checked)."""
    need_site()
    pages = [str(p) for p in site_pages()] + [str(SITE / "genindex.html")]
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    cmd += ["-p", "no:xdist", "-o", "addopts=", "--rootdir", str(SITE)]
    cmd += ["--check-links", "--check-anchors"]
    cmd += ["--check-links-ignore", r"https?://.*", "--check-links-ignore", "mailto:.*"]
    proc = subprocess.run(cmd + pages, capture_output=True, text=True, cwd=SITE)
    tail = "\n".join(proc.stdout.splitlines()[-40:])
    assert proc.returncode == 0, f"broken internal links:\n{tail}"


def book_pages_in_order() -> list[Path]:
    """The site's pages in the order of _toc.yml: the root first."""
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]] + [
        ch["file"] for part in toc["parts"] for ch in part["chapters"]
    ]
    return [SITE / f"{f}.html" for f in files]


def test_whole_book_pdf(browser):
    """The whole book as one PDF, _build/book.pdf: every page of the site printed by the
    browser (its print styles drop the navigation), in the order of the table of
    contents, joined with pypdf."""
    import base64
    import io

    from pypdf import PdfReader, PdfWriter

    need_site()
    writer = PdfWriter()
    pages = book_pages_in_order()
    for page in pages:
        assert page.is_file(), f"{page} is not in the site"
        browser.get(page.as_uri())
        browser.execute_async_script(INSPECT)  # math typeset, images loaded
        pdf = browser.execute_cdp_cmd(
            "Page.printToPDF",
            {"printBackground": True, "paperWidth": 8.27, "paperHeight": 11.69},
        )
        for p in PdfReader(io.BytesIO(base64.b64decode(pdf["data"]))).pages:
            writer.add_page(p)
    out = ROOT / "_build" / "book.pdf"
    with out.open("wb") as f:
        writer.write(f)
    n = len(PdfReader(out).pages)
    assert n > 10 * len(pages) // 2, f"the book's PDF has only {n} pages"


# A chapter's Colab copy as a reader sees it when Colab opens it: rendered from the
# notebook (nbconvert's JupyterLab template, as close to Colab's renderer as runs
# offline), with the book's own MathJax and the $-delimiters Colab uses.
COLAB_CHAPTERS = ["01-deep-mf", "14-ivpt"]
MATHJAX_CONFIG = (
    "<script>window.MathJax = {tex: {inlineMath: [['$', '$'], ['\\\\(', '\\\\)']], "
    "displayMath: [['$$', '$$'], ['\\\\[', '\\\\]']], processEscapes: true}};</script>"
)


@pytest.mark.parametrize("chapter", COLAB_CHAPTERS)
def test_colab_copy_reads_cleanly(browser, chapter, tmp_path):
    """The generated Colab copy (colab/NN-slug.ipynb), rendered and opened offline:
    every formula typeset, no directive, role or citation source showing as text, a
    theorem and an exercise rendered (tests/test_colab_copies.py checks that the
    solutions are left out), and screenshots of the title, the first theorem and the
    first exercise (_build/screenshots/colab-NN-slug-*.png) for a person to look at."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="lab")
    mathjax = ROOT / "_vendor" / "mathjax" / "tex-mml-chtml.js"
    exporter.mathjax_url = mathjax.as_uri()
    body, _ = exporter.from_filename(str(ROOT / "colab" / f"{chapter}.ipynb"))
    # MathJax 3 reads window.MathJax (the template's configuration is MathJax 2's);
    # require.js from a CDN is only for widgets and cannot load offline.
    body = body.replace(
        f'<script src="{mathjax.as_uri()}"',
        MATHJAX_CONFIG + "\n" + f'<script src="{mathjax.as_uri()}"',
        1,
    )
    body = re.sub(r'<script src="https://[^"]*require[^"]*"> *</script>', "", body)
    page = tmp_path / f"{chapter}.html"
    page.write_text(body)
    browser.get(page.as_uri())
    seen = browser.execute_async_script(
        VISIBLE_PROSE
        + r"""const done = arguments[arguments.length - 1];
        MathJax.startup.promise.then(() => {
          const prose = visibleProse(document.querySelector("main") || document.body);
          done({prose: prose,
                math: document.querySelectorAll("mjx-container").length,
                errors: document.querySelectorAll("mjx-merror").length,
                height: document.documentElement.scrollHeight});
        }).catch(e => done({error: String(e)}));"""
    )
    assert "error" not in seen, seen
    browser.save_screenshot(str(SHOTS / f"colab-{chapter}-title.png"))
    # the first theorem (a quoted block) and the first exercise, scrolled to the top
    shown = {}
    for what, xpath in (
        ("theorem", "//blockquote[.//strong]"),
        ("exercise", "//strong[starts-with(normalize-space(.), 'Exercise')]"),
    ):
        shown[what] = browser.execute_script(
            "const e = document.evaluate(arguments[0], document, null, "
            "XPathResult.FIRST_ORDERED_NODE_TYPE, null).singleNodeValue;"
            "if (e) { e.scrollIntoView(); window.scrollBy(0, -40); } return !!e;",
            xpath,
        )
        browser.save_screenshot(str(SHOTS / f"colab-{chapter}-{what}.png"))
    problems = [f"no {what} rendered" for what, found in shown.items() if not found]
    if seen["math"] < 10 or seen["errors"]:
        problems.append(f"{seen['math']} formulas typeset, {seen['errors']} errors")
    tex = [t for t in ("$", "\\frac", "\\mathbb", "\\(", "\\[") if t in seen["prose"]]
    if tex:
        problems.append(f"TeX source showing as text: {tex}")
    raw = [t for t in [*RAW_MARKUP, "{cite", "{prf", ":::"] if t in seen["prose"]]
    if raw:
        problems.append(f"directive or role source showing as text: {raw}")
    assert not problems, f"colab/{chapter}.ipynb:\n" + "\n".join(problems)
