"""visdom's page, our side of it: its script mended, its static files, its hash of a window.

:mod:`visualizer.server.child` applies these in the visdom server's process:

* **Serve our provisioned static dir**, and let tornado >= 6.6 serve visdom's index
  page (it refuses to hash ``../user/style.css`` outside static/: 403).
* **visdom's page script mended** (served from memory, the file untouched): image
  panes no longer swallow the keys typed into the view pane's fields, an image
  pane reads no snapshot past its history, a window's messages are applied to the
  page's copy of it in the order they came (out of order, the page fetched the whole
  env again, several times a second), an update that does not apply to the page's
  copy of a window reloads the env instead of throwing, a plot reports a change
  of its x range (a zoom, a double-click back) to the visualizer, which draws the
  stored points in that range (:mod:`visualizer.model.zoom`), a parallel-coordinates
  pane (WebGL, slow without a GPU) is drawn after the line plots, and panes widen to
  fill the page's width in whole columns.
* **A run highlighted where the pointer is** (:data:`HOVER_SCRIPT`, after visdom's):
  hovering a curve or a table row that links a run dims every other run's curves in
  every plot of the page and marks that run's rows in its tables (the page's own
  drawing: nothing is sent, nothing redrawn).
* **A window's hash as the page computes it.** A page applies a window's update to
  its copy and checks the result against the server's hash of the window; on a
  mismatch it fetches the whole env again. visdom hashes Python's JSON, which writes
  ``1e-05`` where the page's JavaScript writes ``0.00001`` (and escapes non-ASCII
  text): every update of a window holding such a value (a learning rate, a small
  loss) made every open page reload the env, 4 times a second in the soak run, and
  a page open for a whole run fell minutes behind.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

from visualizer.layout import PANE_MARGIN, PLOT_SIZE

# The event a plot pane sends when its x range changes (visualizer.model.zoom reads it):
# {"event_type": ZOOM_EVENT, "range": [lo, hi] in the axis' numbers, or null for autorange}.
ZOOM_EVENT = "XRange"
# A parallel-coordinates pane waits until the page's other plot panes are drawn and no
# window came or was drawn for this long; never longer than the second.
PARCOORDS_QUIET_MS, PARCOORDS_MAX_WAIT_MS = 300, 10_000


# visdom 0.2.4's page script, mended where it fails a page left open (each found once or more;
# a script without them is served as it is).
_PAGE_SCRIPT = "js/main.js"
_SCRIPT_MENDS = (
    # Image panes swallow every key pressed anywhere on the page: a field of the view
    # pane (smoothing) took no typing once a run had an image.
    (
        b'case"keydown":case"keypress":e.preventDefault();break;',
        b'case"keydown":case"keypress":/^(INPUT|SELECT|TEXTAREA)$/'
        b".test(e.target&&e.target.tagName)||e.preventDefault();break;",
    ),
    # An image pane's slider position past its history blanks the page (see above).
    (b"s=s[y]),s.caption", b"s=s[Math.min(y,s.length-1)]),s.caption"),
    # The page kept a window's copy (what updates are checked against) in step with the
    # server only while no two messages for it came within 100 ms: window messages wait
    # in a 100 ms batch before they reach the copy, updates wait 0 ms, and an update's
    # result for display was patched onto the displayed pane, itself still waiting in that
    # batch. Out of step, the check failed and the page fetched the whole env again,
    # whose windows then raced the next update the same way: 4-8 fetches a second in the
    # soak run, and a page open for the whole run fell minutes behind. So: a window
    # message reaches the copy at once, an update is checked at once, in the order they
    # came, and the display gets the checked copy.
    (
        b"e.postForEnv(e.state.envIDs):e.addPaneBatched(n);break;",
        b"e.postForEnv(e.state.envIDs):(e.state.consistent_pane_copy[n.id]="
        b"JSON.parse(JSON.stringify(n)),window.rtmPaneAt=performance.now(),"
        b"n.type==='plot'&&!((n.content||{}).data||[]).some(function(c){return c&&"
        b"c.type==='parcoords'})&&((window.rtmWant=window.rtmWant||{})[n.id]=1),"
        b"e.addPaneBatched(n));break;",
    ),
    (b"setTimeout(e._checkWindow,0,n,3)", b"e._checkWindow(n,3)"),
    # A window drawn again at a new size (the comparison's first row as runs arrive) kept its
    # old one: the page changed its layout item in place, and the grid, handed items equal to
    # those it had, laid nothing out again. The item is now replaced by a resized copy, and
    # the page packs its panes again in their order, as when a pane closes (a wider pane left
    # where it was overlapped the next, pushed down out of its row) ...
    (
        b"var o=Ly(r,t.id);t.width&&(o.w=e.p2w(t.width))",
        b"var o=Ly(r,t.id),z=o.w+'x'+o.h;o=r[r.indexOf(o)]=Object.assign({},o);"
        b"t.width&&(o.w=e.p2w(t.width))",
    ),
    (
        b"e.state.consistent_pane_copy[t.id]=JSON.parse(JSON.stringify(t))}else{",
        b"e.state.consistent_pane_copy[t.id]=JSON.parse(JSON.stringify(t));"
        b"z!==o.w+'x'+o.h&&(e._rtmResized=1)}else{",
    ),
    # ... once the batch the sizes came in is laid out.
    (
        b"e._pendingPanes=[],e._timeoutID=null,e.setState({panes:t,layout:n})",
        b"e._pendingPanes=[],e._timeoutID=null,e.setState({panes:t,layout:n},function(){"
        b"e._rtmResized&&(e._rtmResized=0,e.relayout())})",
    ),
    # Window messages are drawn in batches 10 ms after the first, not 100: a comparison's
    # windows come one by one while the page draws the one before (each a 100-run plot),
    # and each waited the whole batch time again (a window is drawn after its batch).
    (b"setTimeout(e.processBatchedPanes,100)", b"setTimeout(e.processBatchedPanes,10)"),
    (
        b"var o=e.state.panes[t.win],a=Ty.applyPatch(o,t.content).newDocument;e.addPaneBatched(a)",
        b"e.addPaneBatched(JSON.parse(JSON.stringify(i)))",
    ),
    # A window's update that does not apply to the page's copy of it threw (uncaught,
    # the update lost): on failure take visdom's own way out of a mismatch, reloading
    # the env's windows (which also replaces the copy the failed patch left half done).
    (
        b"var r=e.state.consistent_pane_copy[t.win],i=Ty.applyPatch(r,t.content).newDocument;",
        b"var r=e.state.consistent_pane_copy[t.win],i={};"
        b"try{i=Ty.applyPatch(r,t.content).newDocument}catch(x){}",
    ),
    # The page asked for its env twice as it opened (once when the server registered it,
    # once more on its first update after that), so the server sent every window twice:
    # 3.8 MB more to parse for a comparison of 100 runs. The registration's ask stays
    # (a reconnect asks through it too).
    (
        b"this._firstLoad&&this.state.sessionID&&(this._firstLoad=!1,this.state.envIDs.length>0"
        b"?this.postForEnv(this.state.envIDs):",
        b"this._firstLoad&&this.state.sessionID&&(this._firstLoad=!1,this.state.envIDs.length>0?0:",
    ),
    # A plot pane keeps its props where its drawing (below) can reach them.
    (
        b"function(e){var t=e.contentID,n=e.content,",
        b"function(e){var rtmPane=e,t=e.contentID,n=e.content,",
    ),
    # Panes fill the page's width: a page wider than whole columns of plot panes
    # (PLOT_SIZE wide) widens every pane's slot (the pane and its margin) by the same factor,
    # so that the columns reach the right edge (a plot pane is 785 px wide at 1600 px, where
    # two 600 px ones left 380 px blank) and a row that fills whole columns (the status,
    # view and options panes take two) still fits. Never narrower than asked; in one column,
    # only panes at least a plot wide widen, to the page's width. The width is the grid's
    # own, and a pane's columns are those the grid will have at that width: visdom's page
    # lays out its first windows believing it 1280 px wide (its columns scale with the width).
    (
        b'_y(Ay(e),"p2w",(function(t){var n=e.colWidth();return(t+ad)/(n+ad)}))',
        b'_y(Ay(e),"p2w",(function(t){var g=document.querySelector(".react-grid-layout"),'
        b"G=g&&g.offsetWidth||e.state.width,W=G-ad,k=W/(e.state.cols*G/e.state.width),slot="
        + str(PLOT_SIZE[0] + PANE_MARGIN).encode()
        + b",c=Math.floor(W/slot),s=Math.max(1,(Math.floor(W/Math.max(1,c))-1)/slot);"
        b"return(s>1&&(c>1||t+ad>=slot)?Math.min((t+ad)*s,Math.max(t+ad,W-1)):t+ad)/k}))",
    ),
    # ... when the page's width changes, every pane that asked for a width is fitted again
    # (visdom's page does so for a pane at each of its updates, not for a finished run's);
    # a pane whose columns stay the same is not drawn again ...
    (
        b'_y(Ay(e),"onWidthChange",(function(t,n){e.setState({cols:n,width:t},(function(){',
        b'_y(Ay(e),"onWidthChange",(function(t,n){e.setState({cols:n,width:t},(function(){'
        b"e.state.layout=e.state.layout.map(function(l){var p=e.state.panes[l.i];"
        b"var w=p&&p.width?e.p2w(p.width):l.w;return w===l.w?l:Object.assign({},l,{w:w,width:w})});",
    ),
    # ... and so is a pane whose place the page kept from an earlier visit (at another width).
    (
        b"a){var s=a;e._bin.content.push(s)}",
        b"a){var s=a;t.width&&(s.w=s.width=e.p2w(t.width));e._bin.content.push(s)}",
    ),
    # After each drawing, a change of the x range is sent as the pane's ZOOM_EVENT (null:
    # autorange), as numbers of the axis (a date axis in ms), without the pane's data.
    #
    # And a parallel-coordinates pane is drawn once the page's other plot panes are drawn
    # (each plot window message marks its window wanted, rtmWant above, until drawn: its
    # pane may come a render later, after the quiet time once ran out, and wait 3 s behind)
    # and quiet (PARCOORDS_QUIET_MS; a window message marks rtmPaneAt above): Plotly draws
    # it with WebGL, which a browser without a GPU draws in software (3 s for 100 runs
    # here) on the one thread that draws every pane, so the comparison's line plots waited
    # for it. Each draw of a pane (by its id) supersedes the one it may still be waiting with.
    (
        b'Plotly.newPlot(t,e.concat(r),n.layout,{showLink:!0,linkText:"Edit"})',
        b"(function(id,w,draw){var later=w.some(function(c){return c&&c.type==='parcoords'}),"
        b"m=window.rtmDraws=window.rtmDraws||{},k=m[id]=(m[id]||0)+1;"
        b"if(!later){draw();window.rtmPlotAt=performance.now();"
        b"window.rtmWant&&delete window.rtmWant[rtmPane.id];return}"
        b"var q=" + str(PARCOORDS_QUIET_MS).encode() + b",t0=performance.now();"
        b"(function wait(){if(m[id]!==k)return;var now=performance.now(),"
        b"busy=Math.max(window.rtmPlotAt||0,window.rtmPaneAt||0,t0)>now-q||"
        b"Object.keys(window.rtmWant||{}).length>0||"
        b"Array.prototype.some.call(document.querySelectorAll('.plotly-graph-div'),"
        b"function(g){return g.id!==id&&!g.data});"
        b"if(busy&&now-t0<" + str(PARCOORDS_MAX_WAIT_MS).encode() + b")return setTimeout(wait,100);"
        b"draw()})()})(t,e,function(){"
        b'Plotly.newPlot(t,e.concat(r),n.layout,{showLink:!0,linkText:"Edit"}).then(function(g){'
        b'g.on("plotly_relayout",function(v){'
        b'if(!Object.keys(v||{}).some(function(k){return k.indexOf("xaxis.")===0}))return;'
        b"var a=g._fullLayout.xaxis,x=a.autorange?null:a.range.map(function(b){return a.r2l(b)});"
        b"rtmPane.onFocus(rtmPane.id,function(){rtmPane.appApi.sendPaneMessage("
        b'{event_type:"' + ZOOM_EVENT.encode() + b'",range:x,pane_data:!1})})})})})',
    ),
)


# Hovering a run's curve (its trace's name, less the table's marks) or a table row whose
# first cell links a run: every plot on the page dims the other runs' traces (their SVG groups,
# so visdom's copy of each window is untouched), every table marks that run's rows, and a
# parallel-coordinates plot draws that run's line (its trace's customdata names each line's
# run) in its curve's color (else its group's) over the others in grey: a restyle of the page's plot alone, put back when
# the pointer leaves, at most one a HOVER_PARCOORDS_MS (WebGL: seconds without a GPU). Every
# page of the server open in the browser does the same (a BroadcastChannel, nothing sent to the
# server): the runs table's page marks the run hovered on the comparison's page, and back.
HOVER_PARCOORDS_MS = 150
HOVER_CHANNEL = "rtm-hover"
HOVER_SCRIPT = rb"""
;(function(){var on=null,bc=window.BroadcastChannel?new BroadcastChannel("%(channel)s"):null,pc=null;
function strip(s){return String(s||"").replace(/^\u25cf\s*/,"").replace(/\s*\((baseline|hidden|smoothed)\)$/,"").trim()}
function of(n,t){var m=strip(t&&t.name);return m===n||m.indexOf(n+" ")===0}
function hue(l,i,n){var c=null;document.querySelectorAll(".js-plotly-plot").forEach(function(g){(g._fullData||[]).forEach(function(t){
if(!c&&t.type==="scatter"&&strip(t.name)===n&&t.line)c=t.line.color})});if(c)return c;
var s=l.colorscale,v=(l.color||[])[i];if(!Array.isArray(s)||typeof v!=="number")return "#d62728";
var f=(v-(l.cmin||0))/((l.cmax||1)-(l.cmin||0)||1),b=s[0];s.forEach(function(x){if(Math.abs(x[0]-f)<Math.abs(b[0]-f))b=x});return b[1]}
function lines(n){document.querySelectorAll(".js-plotly-plot").forEach(function(g){var t=(g.data||[])[0];
if(!t||t.type!=="parcoords"||!Array.isArray(t.customdata)||!window.Plotly)return;
if(g.rtmTrace!==t){g.rtmTrace=t;g.rtmShown=null;g.rtmLine=JSON.stringify(t.line||{})}
var i=n===null?-1:t.customdata.indexOf(n),o=JSON.parse(g.rtmLine),l=o;
if(i>=0)l={color:t.customdata.map(function(m){return m===n?1:0}),cmin:0,cmax:1,showscale:false,
colorscale:[[0,"rgba(160,160,160,0.25)"],[1,hue(o,i,n)]]};
if(g.rtmShown===(i>=0?n:null))return;g.rtmShown=i>=0?n:null;Plotly.restyle(g,{line:[l]},[0])})}
function mark(n,here){if(n===on)return;on=n;
here&&bc&&bc.postMessage(n);
document.querySelectorAll(".js-plotly-plot").forEach(function(g){
var ts=g.querySelectorAll(".scatterlayer .trace");
(g.data||[]).filter(function(t){return (t.type||"scatter")==="scatter"}).forEach(function(t,i){
if(ts[i])ts[i].style.opacity=n===null||of(n,t)?"1":"0.15"})});
document.querySelectorAll("tr").forEach(function(r){var c=r.cells&&r.cells[0];
r.style.background=n!==null&&c&&c.tagName==="TD"&&strip(c.textContent)===n?"#ffe58f":""});
clearTimeout(pc);pc=setTimeout(function(){lines(on)},%(every)d)}
if(bc)bc.onmessage=function(e){mark(typeof e.data==="string"?e.data:null,false)};
function hook(){document.querySelectorAll(".js-plotly-plot").forEach(function(g){
if(!g.on||g.rtmOn===g.on)return;g.rtmOn=g.on;
g.on("plotly_hover",function(e){var p=e&&e.points&&e.points[0];if(p&&p.data&&p.data.name)mark(strip(p.data.name),true)});
g.on("plotly_unhover",function(){mark(null,true)})})}
setInterval(hook,500);
document.addEventListener("mouseover",function(e){var t=e.target,r=t&&t.closest&&t.closest("tr"),
c=r&&r.cells&&r.cells[0];if(c&&c.tagName==="TD"&&c.querySelector("a")){mark(strip(c.textContent),true);return}
if(on!==null&&!(t&&t.closest&&t.closest(".js-plotly-plot")))mark(null,true)})})();
""" % {b"channel": HOVER_CHANNEL.encode(), b"every": HOVER_PARCOORDS_MS}


# Our rules for the page, served as visdom's user style (after any of the user's own). Every
# title shown once: a plot pane's bar does not repeat the title the plot draws (the pane keeps
# its title: the page's filter finds it by that). Every caption shown once: an image pane
# prints it above (among its widgets) and under the image; under the image stays, as W&B has it.
# The page's scroll bar is always there: the panes are sized to the page's width (above), and
# a bar that came with the panes would narrow it, and draw every plot again, as they arrive.
PAGE_STYLE = """
html { overflow-y: scroll; }
.react-grid-item:has(.js-plotly-plot) > .window > .bar > div.pull-right { display: none; }
.react-grid-item .window > .widgets > span.widget { display: none; }
"""


def add_page_style(visdom_app: Any) -> None:
    """Serve :data:`PAGE_STYLE` with the user's style of visdom's page."""
    load = visdom_app.Application.load_user_settings

    def load_user_settings(self: Any) -> dict[str, Any]:
        settings: dict[str, Any] = load(self)
        settings["user_css"] = settings.get("user_css", "") + PAGE_STYLE
        return settings

    visdom_app.Application.load_user_settings = load_user_settings


def _mended(script: bytes) -> bytes:
    for old, new in _SCRIPT_MENDS:
        if old not in script:
            logging.warning("visdom's page script lacks %r: served without that mend", old[:40])
        script = script.replace(old, new)
    return script + HOVER_SCRIPT


def serve_static_files(visdom_app: Any, static_dir: str | None) -> None:
    """Pages and static files from ``static_dir``; the index page served on tornado >= 6.6;
    visdom's page script mended."""
    from tornado.web import HTTPError, StaticFileHandler

    mended: dict[str, bytes] = {}  # the script's path -> its mended bytes

    class VisdomStaticFileHandler(StaticFileHandler):
        @classmethod
        def get_version(cls, settings: dict[str, object], path: str) -> str | None:
            try:
                return super().get_version(settings, path)
            except HTTPError:  # ../user/style.css, visdom's per-user CSS route: no hash
                return None

        @classmethod
        def get_content(cls, abspath: str, start: int | None = None, end: int | None = None) -> Any:
            if not abspath.endswith(_PAGE_SCRIPT):
                return super().get_content(abspath, start, end)
            if abspath not in mended:
                mended[abspath] = _mended(Path(abspath).read_bytes())
            return mended[abspath][start:end]

        def get_content_size(self) -> int:
            path = self.absolute_path or ""
            if path.endswith(_PAGE_SCRIPT):
                return len(self.get_content(path))
            return int(super().get_content_size())

    visdom_app.tornado_settings["static_handler_class"] = VisdomStaticFileHandler
    if static_dir:
        visdom_app.tornado_settings["static_path"] = static_dir
        visdom_app.tornado_settings["template_path"] = static_dir


# A JSON string (skipped as it is) or a number Python writes with an exponent.
# A JSON string (kept as it is), or a number JavaScript writes otherwise than Python: a
# whole float (2.0), one with an exponent (1e-05), or an integer too long for a double.
_STRING_OR_NUMBER = re.compile(
    r'"[^"\\]*+(?:\\.[^"\\]*+)*+"'  # possessive: no backtracking over long text
    r"|(?<![\d.])(-?\d++(?:\.0(?![\d])|(?:\.\d++)?+e[-+]?\d++|(?<=\d{16})))(?![\d.e])"
)


def _as_javascript_writes(match: re.Match[str]) -> str:
    """A number token of Python's JSON as JavaScript's ``JSON.stringify`` writes it."""
    token = match.group(1)
    if token is None:
        return match.group(0)
    number = float(token)
    if number.is_integer() and abs(number) < 1e21:
        return str(int(Decimal(repr(number))))  # 2.0 -> 2; the double's digits, then zeros
    if 1e-6 <= abs(number) < 1e21:  # JavaScript writes these without an exponent
        return format(Decimal(token), "f")
    mantissa, _, exponent = repr(number).partition("e")
    return f"{mantissa}e{int(exponent):+d}"  # 1e-08 -> 1e-8, 1e+21 stays


def page_hash(window: dict[str, Any]) -> str:
    """The md5 of ``window`` as visdom's page computes it (stable JSON as JavaScript writes it)."""
    text = json.dumps(window, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    text = _STRING_OR_NUMBER.sub(_as_javascript_writes, text)
    return hashlib.md5(text.encode("utf-8")).hexdigest()
