// The dev console: plugins, grants, tools and a chat with live tool events, over the host's
// public HTTP API. Every text that comes from the host (plugin names, tool output, model
// text) is written with textContent or as a text node, never parsed as HTML, and the page's
// Content-Security-Policy allows no inline script: a hostile plugin cannot script the page.

const TOKEN_KEY = "reference-host.token";
const CONVERSATION_KEY = "reference-host.conversation";

const byId = (id) => document.getElementById(id);

/** An element with a class, a text and children (strings become text nodes). */
function el(tag, { className, text, attrs } = {}, ...children) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  for (const [name, value] of Object.entries(attrs ?? {})) node.setAttribute(name, value);
  for (const child of children) {
    if (child !== null && child !== undefined && child !== false) node.append(child);
  }
  return node;
}

function tag(text, kind = "") {
  return el("span", { className: kind ? `tag ${kind}` : "tag", text });
}

/** A card's head: its title, then its tags. */
function cardHead(title, ...tags) {
  return el(
    "div",
    { className: "card-head" },
    el("strong", { className: "grow", text: title }),
    ...tags,
  );
}

/**
 * JSON text indented for reading; anything else as it came. So is JSON with a number a
 * double cannot hold (an integer past 2^53, an overflow): the host keeps those exact, and an
 * approval must show what will be sent, not a rounded copy.
 */
function pretty(text) {
  if (typeof text !== "string") return JSON.stringify(text, null, 2);
  let exact = true;
  const check = (key, value) => {
    if (typeof value === "number" && !Number.isSafeInteger(value)) {
      if (!Number.isFinite(value) || Number.isInteger(value)) exact = false;
    }
    return value;
  };
  try {
    const value = JSON.parse(text, check);
    return exact ? JSON.stringify(value, null, 2) : text;
  } catch {
    return text;
  }
}

// ------------------------------------------------------------------------------ the API

/** An error answer of the API: `{"error", "problems"}`, or whatever else came back. */
class ApiFailure extends Error {
  constructor(status, body, text) {
    const message =
      body && typeof body.error === "string" ? body.error : text || "no answer body";
    super(status ? `${status}: ${message}` : message);
    this.status = status;
    this.problems = body && Array.isArray(body.problems) ? body.problems.map(String) : [];
  }
}

function token() {
  return byId("token").value.trim();
}

/** fetch with the bearer token (when one is set) and a JSON body. */
async function request(method, path, body, signal) {
  const headers = {};
  if (token()) headers.Authorization = `Bearer ${token()}`;
  const init = { method, headers, signal };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  try {
    return await fetch(path, init);
  } catch (error) {
    throw new ApiFailure(0, null, `the host did not answer (${error.message})`);
  }
}

/** The JSON answer, or an ApiFailure for an answer other than 2xx. */
async function call(method, path, body) {
  const response = await request(method, path, body);
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) throw new ApiFailure(response.status, data, text);
  return data;
}

function showError(box, error) {
  const problems = error instanceof ApiFailure ? error.problems : [];
  box.replaceChildren(
    el("strong", { text: error.message }),
    problems.length ? el("ul", {}, ...problems.map((p) => el("li", { text: p }))) : null,
  );
  box.hidden = false;
}

function clearError(box) {
  box.hidden = true;
  box.replaceChildren();
}

/** Run action, showing its failure (if any) in box. */
async function guarded(box, action) {
  clearError(box);
  try {
    await action();
  } catch (error) {
    showError(box, error);
  }
}

// ------------------------------------------------------------------- the conversation

function newConversationId() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `conv_${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

// The host's id rule (reference_host.http.ids): what `?conversation=` and the open form take.
const CONVERSATION_ID = /^[A-Za-z0-9_.:-]{1,128}$/;

/** The conversation named in the address (`?conversation=ID`), if it is a valid id. */
function conversationFromUrl() {
  const named = new URLSearchParams(location.search).get("conversation");
  return named !== null && CONVERSATION_ID.test(named) ? named : null;
}

/**
 * The conversation the console shows: the one the address names (a link to a conversation
 * that curl or a script posts to), else this tab's last one, else a new one. Its id is put
 * in the address, so a reload or a shared link opens the same conversation.
 */
const conversation = {
  id: conversationFromUrl() || sessionStorage.getItem(CONVERSATION_KEY) || newConversationId(),
  set(id) {
    this.id = id;
    sessionStorage.setItem(CONVERSATION_KEY, id);
    byId("conversation-id").textContent = id;
    byId("open-conversation").value = "";
    const address = new URL(location.href);
    address.searchParams.set("conversation", id);
    history.replaceState(null, "", address.pathname + address.search);
  },
};

// ----------------------------------------------------------------------- plugins, tools

let plugins = [];

function pluginCard(plugin) {
  const toggle = el("button", {
    text: plugin.enabled ? "Disable" : "Enable",
    attrs: { type: "button" },
  });
  toggle.addEventListener("click", () =>
    guarded(byId("plugins-error"), async () => {
      toggle.disabled = true;
      const action = plugin.enabled ? "disable" : "enable";
      try {
        await call("POST", `/api/plugins/${encodeURIComponent(plugin.id)}/${action}`);
      } finally {
        toggle.disabled = false;
      }
      await Promise.all([loadPlugins(), loadTools()]);
    }),
  );
  const tools = Array.isArray(plugin.tools) ? plugin.tools : [];
  return el(
    "li",
    { className: "card plugin", attrs: { "data-plugin-id": String(plugin.id) } },
    cardHead(
      plugin.name || plugin.id,
      tag(plugin.enabled ? "enabled" : "disabled", plugin.enabled ? "ok" : "warn"),
    ),
    el("p", { className: "muted", text: `${plugin.id} ${plugin.version} · ${plugin.profile}` }),
    el("p", {
      text: tools.length ? `tools: ${tools.join(", ")}` : "no AI tools",
      className: "muted",
    }),
    el("div", { className: "actions" }, toggle),
  );
}

async function loadPlugins() {
  plugins = await call("GET", "/api/plugins");
  byId("plugins").replaceChildren(
    ...(plugins.length ? plugins.map(pluginCard) : [el("li", { className: "muted", text: "none installed" })]),
  );
  const select = byId("grant-plugin");
  const chosen = select.value;
  select.replaceChildren(
    ...plugins.map((p) => el("option", { text: `${p.name || p.id} (${p.id})`, attrs: { value: p.id } })),
  );
  if (plugins.some((p) => p.id === chosen)) select.value = chosen;
}

function toolCard(tool) {
  const effectKind = tool.effect === "read" ? "ok" : "warn";
  return el(
    "li",
    { className: "card", attrs: { "data-tool": String(tool.name) } },
    cardHead(tool.name, tag(tool.effect, effectKind), tag(tool.owner)),
    el("p", { text: tool.description }),
    el(
      "details",
      {},
      el("summary", { className: "muted", text: "input schema" }),
      el("pre", { text: pretty(tool.inputSchema) }),
    ),
  );
}

async function loadTools() {
  const tools = await call("GET", "/api/tools");
  byId("tools").replaceChildren(
    ...(tools.length ? tools.map(toolCard) : [el("li", { className: "muted", text: "no tools" })]),
  );
}

// ------------------------------------------------------------------------------ grants

function grantsPath() {
  return `/api/conversations/${encodeURIComponent(conversation.id)}/grants`;
}

/**
 * A grant's card, with a Revoke button: DELETE on the API, then the list again. A refused
 * revoke shows the host's error, and the list is read again too (a 404: it was gone already).
 */
function grantCard(grant) {
  const revoke = el("button", {
    className: "danger",
    text: "Revoke",
    attrs: { type: "button", "aria-label": `Revoke ${grant.ref.name}` },
  });
  revoke.addEventListener("click", () =>
    guarded(byId("grants-error"), async () => {
      revoke.disabled = true;
      try {
        await call("DELETE", `${grantsPath()}/${encodeURIComponent(grant.ref.id)}`);
      } catch (error) {
        await loadGrants().catch(() => {});
        throw error;
      } finally {
        revoke.disabled = false;
      }
      await loadGrants();
    }),
  );
  return el(
    "li",
    { className: "card grant", attrs: { "data-ref-id": String(grant.ref.id) } },
    cardHead(
      grant.ref.name,
      tag(grant.ref.kind),
      tag(grant.ref.access, grant.ref.access === "read" ? "" : "warn"),
    ),
    el("p", { className: "muted", text: `${grant.pluginId} · ${grant.ref.id}` }),
    el("p", { text: grant.path }),
    el("div", { className: "actions" }, revoke),
  );
}

async function loadGrants() {
  const grants = await call("GET", grantsPath());
  byId("grants").replaceChildren(
    ...(grants.length
      ? grants.map(grantCard)
      : [el("li", { className: "muted", text: "nothing granted to this conversation" })]),
  );
}

// -------------------------------------------------------------------- the event stream

/**
 * Feed a streamed response's body, as it arrives, to an SSEParser that hands each event to
 * onEvent; resolves with the parser when the body ends (a final close() is the caller's).
 */
async function readEvents(response, onEvent) {
  const parser = new SSEParser(onEvent);
  const reader = response.body.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    parser.feed(value);
  }
  return parser;
}

/**
 * text/event-stream as the WHATWG HTML spec parses it: UTF-8 with one leading BOM dropped,
 * lines ending in CRLF, LF or CR (also when split across chunks), `:` comments, `event`,
 * `data` (joined by LF), `id`, `retry`; a blank line dispatches, an event without data is
 * dropped, and an event not ended by a blank line when the stream ends is discarded.
 */
export class SSEParser {
  #decoder = new TextDecoder("utf-8");
  #line = "";
  #skipLF = false;
  #data = [];
  #type = "";
  #idBuffer = "";
  lastEventId = "";
  reconnectionTime = null;

  constructor(onEvent, onComment = () => {}) {
    this.onEvent = onEvent;
    this.onComment = onComment;
  }

  feed(chunk) {
    this.#text(typeof chunk === "string" ? chunk : this.#decoder.decode(chunk, { stream: true }));
  }

  close() {
    this.#text(this.#decoder.decode());
    this.#line = "";
    this.#data = [];
    this.#type = "";
  }

  #text(text) {
    let start = 0;
    let index = 0;
    if (this.#skipLF && text.length) {
      this.#skipLF = false;
      if (text[0] === "\n") start = index = 1;
    }
    while (index < text.length) {
      const char = text[index];
      if (char === "\r" || char === "\n") {
        const line = this.#line + text.slice(start, index);
        this.#line = "";
        if (char === "\r") {
          if (index + 1 === text.length) this.#skipLF = true;
          else if (text[index + 1] === "\n") index += 1;
        }
        start = index + 1;
        this.#process(line);
      }
      index += 1;
    }
    if (start < text.length) this.#line += text.slice(start);
  }

  #process(line) {
    if (line === "") {
      this.#dispatch();
      return;
    }
    if (line.startsWith(":")) {
      this.onComment(stripSpace(line.slice(1)));
      return;
    }
    const colon = line.indexOf(":");
    const name = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? "" : stripSpace(line.slice(colon + 1));
    if (name === "event") this.#type = value;
    else if (name === "data") this.#data.push(value);
    else if (name === "id" && !value.includes("\0")) this.#idBuffer = value;
    else if (name === "retry" && /^[0-9]+$/.test(value)) this.reconnectionTime = Number(value);
  }

  #dispatch() {
    this.lastEventId = this.#idBuffer;
    if (!this.#data.length) {
      this.#type = "";
      return;
    }
    const event = { type: this.#type || "message", data: this.#data.join("\n"), id: this.lastEventId };
    this.#data = [];
    this.#type = "";
    this.onEvent(event);
  }
}

function stripSpace(value) {
  return value.startsWith(" ") ? value.slice(1) : value;
}

// ------------------------------------------------------------------------------- chat

/** One exchange: the user's message and the assistant's answer as its events arrive. */
class Exchange {
  constructor(message, followed = false) {
    this.calls = new Map();
    this.text = null;
    this.thought = null;
    this.tokens = "";
    this.finished = false;
    this.body = el("div", { className: "answer" });
    this.status = el("div", { className: "status outcome", text: "waiting for the host…" });
    this.root = el(
      "div",
      { className: "message assistant" },
      el("div", { className: "who", text: "assistant" }),
      this.body,
      this.status,
    );
    const transcript = byId("transcript");
    const asked = el("div", { className: "message user", text: message });
    if (followed) {
      asked.classList.add("followed");
      asked.title = "posted by another client of this conversation";
    }
    transcript.append(asked, this.root);
    transcript.scrollTop = transcript.scrollHeight;
  }

  /** Handle one event; the transcript follows it when it was scrolled to its end. */
  handle(event) {
    const transcript = byId("transcript");
    const following = transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 48;
    this.show(event);
    if (following) transcript.scrollTop = transcript.scrollHeight;
  }

  show(event) {
    let data;
    try {
      data = JSON.parse(event.data);
    } catch {
      this.append(el("pre", { text: `${event.type}: ${event.data}` }));
      return;
    }
    if (event.type === "token") this.token(String(data.text ?? ""));
    else if (event.type === "thinking") this.thinking(String(data.text ?? ""));
    else if (event.type === "tool" && data.phase === "call") this.toolCall(data);
    else if (event.type === "tool" && data.phase === "filled") this.toolFilled(data);
    else if (event.type === "tool" && data.phase === "result") this.toolResult(data);
    else if (event.type === "approval") this.approval(data);
    else if (event.type === "done") this.done(data);
    else if (event.type === "error") this.error(String(data.message ?? "error"));
    else this.append(el("pre", { text: `${event.type}: ${pretty(event.data)}` }));
  }

  /** A block after the last one; the next text or thought starts a new block. */
  append(node) {
    this.body.append(node);
    this.text = null;
    this.thought = null;
  }

  token(text) {
    if (!this.text) {
      this.append(el("div", { className: "assistant-text" }));
      this.text = this.body.lastElementChild;
    }
    this.text.textContent += text;
    this.tokens += text;
    this.status.textContent = "answering…";
  }

  thinking(text) {
    if (!this.thought) {
      this.append(el("div", { className: "thinking" }));
      this.thought = this.body.lastElementChild;
    }
    this.thought.textContent += text;
  }

  card(id, name) {
    let card = this.calls.get(id);
    if (!card) {
      card = new ToolCard(id, name);
      this.calls.set(id, card);
      this.append(card.root);
    }
    return card;
  }

  toolCall(data) {
    this.card(String(data.id), String(data.name)).called(data.arguments);
    this.status.textContent = `calling ${data.name}…`;
  }

  toolFilled(data) {
    this.card(String(data.id), String(data.name)).filled(data);
  }

  toolResult(data) {
    this.card(String(data.id), String(data.name)).finished(Boolean(data.success), data.output);
    this.status.textContent = "waiting for the model…";
  }

  approval(data) {
    const approval = new ApprovalCard(data);
    const callId = String(data.callId ?? "");
    if (this.calls.has(callId)) this.calls.get(callId).asked(approval);
    else this.append(approval.root);
    this.status.textContent = `waiting for your approval of ${data.name}…`;
  }

  done(data) {
    this.finished = true;
    if (!this.tokens && data.text) this.token(String(data.text));
    const parts = ["done"];
    if (typeof data.tokens === "number" && data.tokens) parts.push(`${data.tokens} tokens`);
    if (typeof data.tps === "number" && data.tps) parts.push(`${data.tps} tokens/s`);
    this.status.textContent = parts.join(" · ");
    this.status.className = "status outcome done";
  }

  error(message) {
    this.finished = true;
    this.status.textContent = `error: ${message}`;
    this.status.className = "status outcome bad";
  }
}

/** A tool call and, once it came, its result; matched by the call id. */
class ToolCard {
  constructor(id, name) {
    this.state = tag("running", "warn state");
    this.arguments = el("pre", { className: "arguments", text: "" });
    this.output = el("pre", { className: "output", text: "" });
    this.outputBlock = el("div", {}, el("div", { className: "muted", text: "Output" }), this.output);
    this.outputBlock.hidden = true;
    this.approvals = el("div", {});
    this.sent = el("div", {});
    this.root = el(
      "div",
      { className: "card tool waiting", attrs: { "data-call-id": id } },
      cardHead(name, tag(id), this.state),
      el("div", { className: "muted", text: "Arguments (from the model)" }),
      this.arguments,
      this.sent,
      this.approvals,
      this.outputBlock,
    );
  }

  called(argumentsText) {
    this.arguments.textContent = pretty(argumentsText ?? "");
  }

  /** What the host sent after filling in granted files (a `filled` event: no approval). */
  filled(data) {
    const injected = Array.isArray(data.injected) ? data.injected.map(String) : [];
    const files = Array.isArray(data.files) ? data.files : [];
    this.sent.replaceChildren(
      el("div", { className: "muted", text: `Sent (filled in by the host: ${injected.join(", ")})` }),
      el("pre", { className: "arguments sent", text: pretty(data.arguments ?? "") }),
      files.length ? filesTable(files, injected) : null,
    );
  }

  asked(approval) {
    this.state.textContent = "waiting for approval";
    this.approvals.append(approval.root);
  }

  finished(success, output) {
    this.state.textContent = success ? "succeeded" : "failed";
    this.state.className = success ? "tag ok state" : "tag bad state";
    this.root.classList.remove("waiting");
    this.root.classList.add(success ? "ok" : "bad");
    this.output.textContent = pretty(output ?? "");
    this.outputBlock.hidden = false;
  }
}

/** An `approval` event: what will be sent, which files it touches, Approve / Deny. */
class ApprovalCard {
  constructor(data) {
    const id = String(data.id);
    const injected = Array.isArray(data.injected) ? data.injected.map(String) : [];
    const files = Array.isArray(data.files) ? data.files : [];
    this.result = el("div", { className: "status decision" });
    this.approve = el("button", { className: "primary", text: "Approve", attrs: { type: "button" } });
    this.deny = el("button", { className: "danger", text: "Deny", attrs: { type: "button" } });
    this.approve.addEventListener("click", () => this.decide(id, true));
    this.deny.addEventListener("click", () => this.decide(id, false));
    this.root = el(
      "div",
      { className: "card approval", attrs: { "data-approval-id": id } },
      cardHead(`Approve ${data.name}?`, tag(data.effect, "warn")),
      el("div", { className: "muted", text: "Arguments that will be sent" }),
      el("pre", { className: "arguments", text: pretty(data.arguments ?? "") }),
      files.length ? filesTable(files, injected) : null,
      !files.length && injected.length
        ? el("p", { text: `Filled in by the host: ${injected.join(", ")}` })
        : null,
      el("div", { className: "actions" }, this.approve, this.deny),
      this.result,
    );
  }

  async decide(id, approved) {
    this.approve.disabled = this.deny.disabled = true;
    this.result.className = "status decision";
    this.result.textContent = approved ? "approving…" : "denying…";
    try {
      await call("POST", `/api/approvals/${encodeURIComponent(id)}`, { approved });
      this.result.textContent = approved ? "Approved" : "Denied";
    } catch (error) {
      this.result.className = "status decision bad";
      this.result.textContent = error.message;
      // 404: decided already or timed out; anything else may be tried again.
      if (!(error instanceof ApiFailure && error.status === 404)) {
        this.approve.disabled = this.deny.disabled = false;
      }
    }
  }
}

function filesTable(files, injected) {
  const head = el(
    "tr",
    {},
    ...["parameter", "file", "access", "resolved path", "filled in by"].map((h) => el("th", { text: h })),
  );
  const rows = files.map((file) => {
    const byHost = typeof file.injected === "boolean" ? file.injected : injected.includes(String(file.parameter));
    return el(
      "tr",
      { attrs: { "data-parameter": String(file.parameter ?? "") } },
      el("td", { text: file.parameter ?? "" }),
      el("td", { text: `${file.name ?? ""} (${file.kind ?? "?"})` }),
      el("td", { text: file.access ?? "" }),
      el("td", { className: "path", text: file.path ?? "" }),
      el("td", { text: byHost ? "the host" : "the model" }),
    );
  });
  return el("table", { className: "files" }, el("thead", {}, head), el("tbody", {}, ...rows));
}

/**
 * Follows the conversation (GET /api/conversations/{id}/events): turns posted by another
 * client (curl, a script, another tab) show as they happen, and on opening a conversation its
 * kept turns show first. This tab's own turns come on their chat stream, so the follower skips
 * them (their message is in `own` until it comes back). Reconnects after the last event seen.
 */
const follower = {
  controller: null,
  own: [],
  current: null,
  skipping: false,
  after: 0,

  start() {
    this.controller?.abort();
    this.controller = new AbortController();
    this.own = [];
    this.current = null;
    this.skipping = false;
    this.after = 0;
    this.run(conversation.id, this.controller.signal);
  },

  async run(id, signal) {
    while (!signal.aborted) {
      try {
        const path = `/api/conversations/${encodeURIComponent(id)}/events?after=${this.after}`;
        const response = await request("GET", path, undefined, signal);
        if (response.ok) {
          await readEvents(response, (event) => this.handle(event));
        }
      } catch {
        // the host went away or the stream was aborted: try again below unless aborted
      }
      if (!signal.aborted) await new Promise((resolve) => setTimeout(resolve, 2000));
    }
  },

  handle(event) {
    const number = Number.parseInt(event.id, 10);
    if (Number.isSafeInteger(number)) this.after = number;
    if (event.type === "message") {
      let text = "";
      try {
        text = String(JSON.parse(event.data).text ?? "");
      } catch {
        text = event.data;
      }
      const mine = this.own.indexOf(text);
      this.skipping = mine !== -1;
      if (this.skipping) this.own.splice(mine, 1);
      this.current = this.skipping ? null : new Exchange(text, true);
      return;
    }
    if (!this.skipping && this.current) this.current.handle(event);
    if (event.type === "done" || event.type === "error") {
      this.current = null;
      this.skipping = false;
    }
  },
};

async function chat(message) {
  follower.own.push(message);
  const exchange = new Exchange(message);
  const send = byId("send");
  send.disabled = true;
  try {
    const response = await request("POST", "/api/chat", { message, conversationId: conversation.id });
    if (!response.ok) {
      const text = await response.text();
      let body = null;
      try {
        body = JSON.parse(text);
      } catch {
        body = null;
      }
      const failure = new ApiFailure(response.status, body, text);
      const problems = failure.problems.length ? ` (${failure.problems.join("; ")})` : "";
      exchange.error(failure.message + problems);
      return;
    }
    (await readEvents(response, (event) => exchange.handle(event))).close();
    if (!exchange.finished) exchange.error("the stream ended without done or error");
  } catch (error) {
    exchange.error(error.message);
  } finally {
    send.disabled = false;
  }
}

// ------------------------------------------------------------------------------ wiring

function refreshAll() {
  guarded(byId("plugins-error"), loadPlugins);
  guarded(byId("tools-error"), loadTools);
  guarded(byId("grants-error"), loadGrants);
}

/**
 * The token the host printed in the console's URL (`/#token=...`): kept for this tab in
 * sessionStorage and taken out of the address bar, so it is not bookmarked or shared with
 * the URL. A fragment never reaches the server, so it is in no log either.
 */
function takeTokenFromUrl() {
  const given = new URLSearchParams(location.hash.slice(1)).get("token");
  if (given === null) return;
  sessionStorage.setItem(TOKEN_KEY, given.trim());
  history.replaceState(null, "", location.pathname + location.search);
}

function start() {
  takeTokenFromUrl();
  byId("token").value = sessionStorage.getItem(TOKEN_KEY) ?? "";
  conversation.set(conversation.id);
  follower.start();

  byId("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, token());
    refreshAll();
  });
  const openConversation = (id) => {
    conversation.set(id);
    byId("transcript").replaceChildren();
    follower.start();
    guarded(byId("grants-error"), loadGrants);
  };
  byId("new-conversation").addEventListener("click", () => openConversation(newConversationId()));
  byId("open-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const id = byId("open-conversation").value.trim();
    if (!CONVERSATION_ID.test(id)) {
      byId("open-conversation").setCustomValidity(
        "1 to 128 characters: ASCII letters, digits, '_', '.', ':' and '-'",
      );
      byId("open-conversation").reportValidity();
      return;
    }
    byId("open-conversation").setCustomValidity("");
    openConversation(id);
  });
  byId("refresh-plugins").addEventListener("click", () => guarded(byId("plugins-error"), loadPlugins));
  byId("refresh-tools").addEventListener("click", () => guarded(byId("tools-error"), loadTools));

  byId("install-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const button = event.submitter;
    guarded(byId("plugins-error"), async () => {
      if (button) button.disabled = true;
      try {
        await call("POST", "/api/plugins", { path: byId("install-path").value.trim() });
        byId("install-path").value = "";
      } finally {
        if (button) button.disabled = false;
      }
      await Promise.all([loadPlugins(), loadTools()]);
    });
  });

  byId("grant-form").addEventListener("submit", (event) => {
    event.preventDefault();
    guarded(byId("grants-error"), async () => {
      await call("POST", grantsPath(), {
        pluginId: byId("grant-plugin").value,
        path: byId("grant-path").value.trim(),
        access: byId("grant-access").value,
      });
      byId("grant-path").value = "";
      await loadGrants();
    });
  });

  const message = byId("message");
  byId("chat-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = message.value;
    if (!text.trim()) return;
    message.value = "";
    chat(text);
  });
  message.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      byId("chat-form").requestSubmit();
    }
  });

  refreshAll();
}

start();
