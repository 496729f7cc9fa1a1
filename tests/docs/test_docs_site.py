"""The documentation site (tools/build_docs.py): every public module has an API page, the
site builds without a warning, every page renders in a real headless browser (Debian's
chromium, installed here where it is missing) with no broken internal link or image, search
finds a name, and every Python example on the README and the guides runs (or its page says,
in an HTML comment before it, why it is not run).

An example may be preceded by a hidden setup, run first in the same namespace:

    <!-- example-setup:
    main, startup = static.Program(), static.Program()
    -->

or by `<!-- example: not run: <why> -->`. Examples start from the names the doctests get
(`np`, `paddle`, `static`, `fluid`, `F`, `dist`) in fresh programs, scope and a temporary
working directory.
"""
import functools
import http.server
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

import api_inventory
from locations import ROOT

BUILD = ROOT / "tools" / "build_docs.py"
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))

needs_checkout = pytest.mark.skipif(not BUILD.exists() or not (ROOT / "docs" / "conf.py").exists(),
                                    reason="needs a source checkout (tools/, docs/)")

_BLOCK = re.compile(r"(?:<!--\s*(example-setup:\n(?P<setup>.*?)|example: not run: (?P<why>.*?))"
                    r"\s*-->\s*\n)?```python\n(?P<code>.*?)```", re.S)


def examples():
    """[(page:line, setup, code, reason not run or None)] of every ```python block."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in _BLOCK.finditer(text):
            line = text.count("\n", 0, m.start("code"))
            found.append((f"{page.relative_to(ROOT).as_posix()}:{line}", m.group("setup") or "",
                          m.group("code"), m.group("why")))
    return found


def _params():
    out = []
    for where, setup, code, why in examples():
        marks = [pytest.mark.skip(reason=f"not run: {why}")] if why else []
        if "exe.run(" in setup + code:
            marks.append(pytest.mark.slow)
        out.append(pytest.param(setup, code, id=where, marks=marks))
    return out


@needs_checkout
@pytest.mark.parametrize("setup, code", _params())
def test_every_example_on_the_pages_runs(setup, code, tmp_path, monkeypatch):
    import numpy as np

    import numbaflow
    import numbaflow.distributed
    import numbaflow.nn.functional
    import numbaflow.static as static
    from numbaflow.kernels.tensor import creation
    from numbaflow.utils import unique_name
    monkeypatch.chdir(tmp_path)
    names = {"np": np, "paddle": numbaflow, "static": static, "fluid": numbaflow.fluid,
             "F": numbaflow.nn.functional, "dist": numbaflow.distributed}
    with creation.seed_guard(), static.program_guard(static.Program(), static.Program()), \
            static.scope_guard(static.Scope()), unique_name.guard():
        exec(compile(setup, "<example-setup>", "exec"), names)
        exec(compile(code, "<example>", "exec"), names)


@needs_checkout
def test_every_example_runs_or_says_why_not():
    found = examples()
    assert len(found) >= 10, f"the example finder sees only {len(found)} blocks"
    assert all(why is None or len(why) > 15 for _, _, _, why in found)
    readme = [e for e in found if e[0].startswith("README.md")]
    assert readme and readme[0][3] is None, "the README's Quick start must run"


@needs_checkout
def test_every_public_module_has_an_api_page():
    pages = {p.stem for p in (ROOT / "docs" / "api").glob("*.md")}
    modules = set(api_inventory.public_modules())
    assert not modules - pages, (f"no page in docs/api/ for {sorted(modules - pages)}: add "
                                 f"docs/api/<module>.md as the others are")
    assert not pages - modules, f"docs/api/ pages for modules that are not public: {pages - modules}"
    listed = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    for page in PAGES[1:]:
        if page.name != "index.md":
            assert f"/docs/{page.stem}\n" in listed, f"docs/index.md's contents lack {page.name}"


def chromium():
    """The path of a headless-capable Chromium; installed with apt-get where missing."""
    names = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
    found = next(filter(None, map(shutil.which, names)), None)
    if found:
        return found
    if not shutil.which("apt-get") or os.geteuid() != 0:
        pytest.skip("no chromium, and apt-get is not usable here (not root) to install it")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "install", "-y", "chromium"], ["apt-get", "update"],
                ["apt-get", "install", "-y", "chromium"]):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
        if cmd[1] == "install" and r.returncode == 0:
            break
    found = next(filter(None, map(shutil.which, names)), None)
    if not found:
        pytest.skip(f"chromium could not be installed: {r.stderr[-500:]}")
    return found


_CHECKER = """<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>
<pre id="report">running</pre><iframe id="f" style="width:1200px;height:900px"></iframe>
<script>
const pages = %s, frame = document.getElementById("f"), out = [];
const load = url => new Promise(done => { frame.onload = () => done(); frame.src = url; });
const sleep = ms => new Promise(done => setTimeout(done, ms));
(async () => {
  for (const page of pages) {
    await load(page);
    const d = frame.contentDocument, body = d.querySelector("article") || d.body;
    out.push({page, title: d.title, h1: !!d.querySelector("h1"), text: body.innerText.length,
              api: d.querySelectorAll("dl.py").length,
              links: [...d.querySelectorAll("a[href]")].map(a => a.href),
              ids: [...d.querySelectorAll("[id]")].map(e => e.id),
              images: [...d.querySelectorAll("img")]
                  .filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)});
  }
  await load("search.html?q=CompiledProgram");
  let hits = [];
  for (let i = 0; i < 200 && !hits.length; i++) {
    await sleep(100);
    hits = [...frame.contentDocument.querySelectorAll("#search-results a")].map(a => a.href);
  }
  document.getElementById("report").textContent = JSON.stringify({pages: out, search: hits});
})().catch(e => { document.getElementById("report").textContent = "ERROR " + e; });
</script></body></html>
"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@needs_checkout
@pytest.mark.slow
def test_the_site_builds_and_every_page_renders_in_a_browser(tmp_path):
    pytest.importorskip("sphinx", reason="the documentation site needs the 'docs' extra")
    pytest.importorskip("myst_parser", reason="the documentation site needs the 'docs' extra")
    browser = chromium()
    site = tmp_path / "site"
    r = subprocess.run([sys.executable, str(BUILD), "--strict", "-o", str(site)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (r.stdout + r.stderr)[-5000:]
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html")
                   if p.relative_to(site).parts[0] not in ("_static", "_sources", "_downloads")
                   and p.name not in ("search.html", "index.html"))
    (site / "_check.html").write_text(_CHECKER % json.dumps(pages), encoding="utf-8")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/"
        dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                              "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}",
                              "--virtual-time-budget=600000", "--dump-dom", base + "_check.html"],
                             capture_output=True, text=True, timeout=300).stdout
    finally:
        server.shutdown()
    m = re.search(r'<pre id="report">(.*?)</pre>', dom, re.S)
    assert m and m.group(1).startswith("{"), f"the browser's check did not finish: {dom[-2000:]}"
    report = json.loads(m.group(1).replace("&lt;", "<").replace("&gt;", ">")
                        .replace("&quot;", '"').replace("&amp;", "&"))
    seen = {p["page"]: p for p in report["pages"]}
    assert set(seen) == set(pages)
    # a package whose __all__ lists only submodules (numbaflow.vision) has no entries itself
    only_modules = {name for name, mod in api_inventory.public_modules().items()
                    if all(inspect.ismodule(getattr(mod, n)) for n in getattr(mod, "__all__", ["?"])
                           if hasattr(mod, n))}
    problems = []
    for p in report["pages"]:
        if not (p["title"] and p["h1"] and p["text"] > 100):
            problems.append(f"{p['page']}: did not render (title {p['title']!r}, "
                            f"{p['text']} characters)")
        module = p["page"][len("docs/api/"):-len(".html")]
        if p["page"].startswith("docs/api/") and not p["api"] and module not in only_modules:
            problems.append(f"{p['page']}: no API entries rendered")
        problems += [f"{p['page']}: broken image {src}" for src in p["images"]]
        for link in p["links"]:
            url = urlparse(link)
            if not link.startswith(base):
                continue
            path = unquote(url.path[1:]) or "index.html"
            if not (site / path).is_file():
                problems.append(f"{p['page']}: broken link to {path}")
            elif url.fragment and path in seen and unquote(url.fragment) not in seen[path]["ids"]:
                problems.append(f"{p['page']}: link to a missing anchor {path}#{url.fragment}")
    assert not problems, "\n".join(problems[:40])
    static_page = site / "docs" / "api" / "numbaflow.static.html"
    text = static_page.read_text(encoding="utf-8")
    for name in ("BuildStrategy", "Executor", "program_guard", "fuse_elewise_add_act_ops"):
        assert name in text, f"{name} is missing from the static API page"
    assert any("numbaflow.static" in h or "how-it-works" in h for h in report["search"]), \
        f"search for CompiledProgram found {report['search'][:5]}"
