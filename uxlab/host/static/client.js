// The participant's page: a terminal (xterm.js) joined to the study program over a WebSocket,
// and the paint probe: each paint mark the host passes (OSC 7311;N) is timed when it is
// parsed and at the next render of the terminal (else the next animation frame), on this
// page's clock; the host maps that clock to its own by a ping exchange.
"use strict";
(function () {
  const MARK_OSC = 7311;
  const statusBox = document.getElementById("status");
  function show(html) {
    statusBox.innerHTML = html;
    statusBox.hidden = !html;
  }
  function text(s) {
    const d = document.createElement("div");
    d.textContent = s;
    return d.innerHTML;
  }

  // The refresh rate of this display: the median interval of 40 animation frames.
  function measureHz(frames) {
    return new Promise((resolve) => {
      const times = [];
      function tick(t) {
        times.push(t);
        if (times.length < frames) {
          requestAnimationFrame(tick);
          return;
        }
        const gaps = [];
        for (let i = 1; i < times.length; i++) gaps.push(times[i] - times[i - 1]);
        gaps.sort((a, b) => a - b);
        const median = gaps[Math.floor(gaps.length / 2)];
        resolve(median > 0 ? 1000 / median : null);
      }
      requestAnimationFrame(tick);
    });
  }

  const term = new Terminal({
    fontFamily: "DejaVu Sans Mono, Menlo, Consolas, monospace",
    fontSize: 15,
    scrollback: 0,
    cursorBlink: false,
  });
  term.open(document.getElementById("terminal"));

  // The terminal's size in cells from the window's size and one cell's size. The cell is
  // measured on the terminal itself (its screen over its rows and columns): a line of text
  // in the page's font has the font's own line box, taller than the terminal's cell with
  // some fonts, which left a band of empty page under the terminal.
  function cellSize() {
    const screen = term.element && term.element.querySelector(".xterm-screen");
    const box = screen ? screen.getBoundingClientRect() : null;
    if (box && box.width > 0 && box.height > 0 && term.cols > 0 && term.rows > 0) {
      return [box.width / term.cols, box.height / term.rows];
    }
    const probe = document.createElement("span"); // not laid out yet: the font's own box
    probe.style.font = "15px " + term.options.fontFamily;
    probe.style.position = "absolute";
    probe.style.visibility = "hidden";
    probe.textContent = "W".repeat(50);
    document.body.appendChild(probe);
    const rect = probe.getBoundingClientRect();
    probe.remove();
    return [rect.width / 50, rect.height];
  }
  function fitSize() {
    const [cellW, cellH] = cellSize();
    const cols = Math.max(20, Math.floor((window.innerWidth - 8) / cellW));
    const rows = Math.max(8, Math.floor((window.innerHeight - 8) / cellH));
    return [Math.min(cols, 300), Math.min(rows, 120)];
  }
  let [cols, rows] = fitSize();
  term.resize(cols, rows);

  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const base = location.pathname.replace(/[^/]*$/, "");
  let ws = null;
  let ended = false;

  function send(obj) {
    if (ws !== null && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(obj));
  }

  // --- the paint probe ---------------------------------------------------------------
  const parsed = []; // [mark number, parse time] not yet rendered
  let timed = []; // [mark number, parse time, paint time] not yet sent
  term.parser.registerOscHandler(MARK_OSC, (data) => {
    const n = parseInt(data, 10);
    if (Number.isNaN(n)) return true;
    parsed.push([n, performance.now()]);
    requestAnimationFrame((frameTime) => {
      // A mark whose frame changed nothing visible gets no render: this frame then.
      const t = performance.now();
      setTimeout(() => settle(t, n), 0);
    });
    return true;
  });
  function settle(t, upTo) {
    while (parsed.length && parsed[0][0] <= upTo) {
      const [n, p] = parsed.shift();
      timed.push([n, p, t]);
    }
  }
  term.onRender(() => {
    const t = performance.now();
    while (parsed.length) {
      const [n, p] = parsed.shift();
      timed.push([n, p, t]);
    }
  });
  setInterval(() => {
    if (timed.length) {
      send({ t: "paints", m: timed });
      timed = [];
    }
  }, 200);

  function start(hz) {
    ws = new WebSocket(scheme + "//" + location.host + base + "ws");
    ws.binaryType = "arraybuffer";
    ws.onopen = () => {
      show("");
      send({
        t: "hello",
        code: decodeURIComponent(location.hash.slice(1)),
        query: location.search,
        cols: cols,
        rows: rows,
        hz: hz,
      });
      term.focus();
    };
    ws.onmessage = (ev) => {
      if (typeof ev.data !== "string") {
        term.write(new Uint8Array(ev.data));
        return;
      }
      const msg = JSON.parse(ev.data);
      if (msg.t === "ping") {
        send({ t: "pong", h: msg.h, p: performance.now() });
      } else if (msg.t === "end") {
        ended = true;
        if (msg.redirect) {
          const url = msg.redirect;
          show(text(msg.message) + '<p><a id="complete" href="' + encodeURI(url) +
               '">Continue</a> (you are taken there in a few seconds)</p>');
          setTimeout(() => location.assign(url), 3000);
        } else {
          show(text(msg.message));
        }
      } else if (msg.t === "refused" || msg.t === "replaced") {
        ended = true;
        show(text(msg.message));
      }
    };
    ws.onclose = () => {
      if (!ended) {
        show("The connection was lost. Your answers so far are stored: open your link " +
             "again to continue.");
      }
    };
  }

  term.onData((d) => send({ t: "in", d: d }));
  window.addEventListener("resize", () => {
    [cols, rows] = fitSize();
    term.resize(cols, rows);
    send({ t: "size", cols: cols, rows: rows });
  });

  // A tab opened in the background gets no animation frames: start without a rate then.
  const noRate = new Promise((resolve) => setTimeout(() => resolve(null), 3000));
  Promise.race([measureHz(41), noRate]).then(start, () => start(null));
})();
