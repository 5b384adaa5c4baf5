// The task list: signs in, lists the user's and their groups' tasks and their saved filters,
// claims, renders the task's form with form-js and submits it, shows the instance's diagram
// with the task marked, and starts processes from their start forms. Every value from a
// model, a variable or a user is put in the page as text (textContent), never as markup; the
// server checks everything again.

const state = { user: null, csrf: null, list: "mine", selected: null, filters: [], search: "" };
const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value);
  }
  for (const child of children) node.append(child);
  return node;
}

async function call(method, path, body) {
  const headers = { "X-CSRF-Token": state.csrf || "" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const resp = await fetch(path, {
    method, headers, credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await resp.text();
  const data = text ? JSON.parse(text) : null;
  if (!resp.ok) {
    const err = new Error((data && data.message) || `${resp.status}`);
    err.status = resp.status;
    throw err;
  }
  return data;
}

const rest = (method, path, body) => call(method, "/engine-rest" + path, body);

function show(signedIn) {
  $("sign-in").hidden = signedIn;
  $("work").hidden = !signedIn;
  $("sign-out").hidden = !signedIn;
  $("who").textContent = signedIn ? state.user : "";
}

async function boot() {
  try {
    const me = await call("GET", "/tasklist/api/session");
    state.user = me.user;
    state.csrf = me.csrf;
    show(true);
    await loadFilters();
    await refresh();
  } catch {
    show(false);
    $("username").focus();
  }
}

$("sign-in-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  $("sign-in-error").textContent = "";
  try {
    const me = await call("POST", "/tasklist/api/session", {
      username: $("username").value, password: $("password").value,
    });
    $("password").value = "";
    state.user = me.user;
    state.csrf = me.csrf;
    show(true);
    await loadFilters();
    await refresh();
  } catch (err) {
    $("sign-in-error").textContent = err.status === 429 ? err.message : "Wrong user or password";
  }
});

$("sign-out").addEventListener("click", async () => {
  await call("DELETE", "/tasklist/api/session");
  state.user = state.csrf = state.selected = null;
  state.list = "mine";
  state.filters = [];
  $("filters").replaceChildren();
  $("tasks").replaceChildren();
  $("task").replaceChildren();
  show(false);
});

function choose(list) {
  state.list = list;
  for (const b of document.querySelectorAll("[data-list]")) {
    b.setAttribute("aria-pressed", String(b.dataset.list === list));
  }
  $("delete-filter").hidden = !list.startsWith("filter:");
  return refresh();
}

for (const button of document.querySelectorAll("nav [data-list]")) {
  button.addEventListener("click", () => choose(button.dataset.list));
}

// The saved filters of the signed-in user (the server lists only theirs).
async function loadFilters() {
  state.filters = await rest("GET", "/filter?resourceType=Task&sortBy=name&sortOrder=asc");
  $("filters").replaceChildren(...state.filters.map((f) => el("li", {},
    el("button", { type: "button", "data-list": `filter:${f.id}`, "data-filter": f.id,
      "aria-pressed": String(state.list === `filter:${f.id}`),
      onclick: () => choose(`filter:${f.id}`), text: f.name }))));
}

// What the current view lists, as a saved filter's query would say it.
function currentQuery() {
  let query;
  if (state.list === "mine") query = { assigneeExpression: "${currentUser()}" };
  else if (state.list === "groups") query = { candidateUserExpression: "${currentUser()}" };
  else {
    const f = state.filters.find((x) => `filter:${x.id}` === state.list);
    query = { ...((f && f.query) || {}) };
  }
  if (state.search) query.nameLike = `%${state.search}%`;
  if (!query.sorting) query.sorting = [{ sortBy: "created", sortOrder: "desc" }];
  return query;
}

$("save-filter").addEventListener("submit", async (event) => {
  event.preventDefault();
  const name = $("filter-name").value.trim();
  $("filter-error").textContent = "";
  if (!name) return;
  try {
    const made = await rest("POST", "/filter/create",
      { resourceType: "Task", name, query: currentQuery(), properties: {} });
    $("filter-name").value = "";
    state.search = "";
    $("search").value = "";
    await loadFilters();
    await choose(`filter:${made.id}`);
  } catch (err) {
    $("filter-error").textContent = err.message;
  }
});

$("delete-filter").addEventListener("click", async () => {
  const id = state.list.slice("filter:".length);
  try {
    await rest("DELETE", `/filter/${encodeURIComponent(id)}`);
  } catch (err) {
    $("filter-error").textContent = err.message;
    return;
  }
  await loadFilters();
  await choose("mine");
});

$("search").addEventListener("input", () => {
  state.search = $("search").value.trim();
  refresh();
});

async function refresh() {
  const me = encodeURIComponent(state.user);
  const like = state.search ? `&nameLike=${encodeURIComponent(`%${state.search}%`)}` : "";
  let tasks;
  if (state.list.startsWith("filter:")) {
    const id = encodeURIComponent(state.list.slice("filter:".length));
    const extra = state.search ? { nameLike: `%${state.search}%` } : {};
    tasks = await rest("POST", `/filter/${id}/list?maxResults=200`, extra);
  } else {
    const query = state.list === "mine"
      ? `assignee=${me}&sortBy=created&sortOrder=desc`
      : `candidateUser=${me}&sortBy=created&sortOrder=desc`;
    tasks = await rest("GET", `/task?${query}${like}&maxResults=200`);
  }
  const items = tasks.map((t) => el("li", { "aria-selected": String(t.id === state.selected) },
    el("button", { type: "button", class: "open", "data-task": t.id, onclick: () => open(t.id),
      text: t.name || t.taskDefinitionKey }),
    el("div", { class: "meta", text: `${t.assignee ? "assigned to " + t.assignee : "unassigned"}`
      + ` · created ${t.created.slice(0, 16).replace("T", " ")}` })));
  $("tasks").replaceChildren(...items);
  if (!items.length) {
    $("tasks").append(el("li", { class: "empty", text: "No tasks here." }));
  }
}

async function open(taskId) {
  state.selected = taskId;
  const pane = $("task");
  let task;
  try {
    task = await rest("GET", `/task/${encodeURIComponent(taskId)}`);
  } catch (err) {
    pane.replaceChildren(el("p", { class: "error", role: "alert", text: err.message }));
    return refresh();
  }
  const mine = task.assignee === state.user;
  const actions = el("div", { class: "actions" });
  if (!task.assignee) {
    actions.append(el("button", { type: "button", id: "claim", text: "Claim",
      onclick: () => act(() => rest("POST", `/task/${task.id}/claim`, { userId: state.user })) }));
  }
  if (mine) {
    actions.append(el("button", { type: "button", id: "unclaim", text: "Unclaim",
      onclick: () => act(() => rest("POST", `/task/${task.id}/unclaim`)) }));
  }
  const error = el("p", { class: "error", id: "form-error", role: "alert" });
  const formBox = el("div", { id: "form" });
  const where = el("section", { class: "where" },
    el("h3", { text: "Where this task stands" }),
    el("div", { id: "diagram", class: "diagram" }));
  pane.replaceChildren(
    el("h2", { id: "task-name", text: task.name || task.taskDefinitionKey }),
    el("p", { class: "meta", text: task.description || "" }),
    actions, formBox, error, comments(task), where);
  showDiagram(task.id, where);
  if (mine) await renderForm(task, formBox, error);
  await refresh();

  async function act(run) {
    try {
      await run();
      await open(task.id);
    } catch (err) {
      error.textContent = err.message;
    }
  }
}

async function renderForm(task, box, error) {
  const [{ schema, formKey }, values] = await Promise.all([
    call("GET", `/tasklist/api/task/${encodeURIComponent(task.id)}/form`),
    rest("GET", `/task/${encodeURIComponent(task.id)}/form-variables`),
  ]);
  const submit = async (data) => {
    const variables = {};
    for (const [name, value] of Object.entries(data)) variables[name] = { value };
    try {
      await rest("POST", `/task/${task.id}/submit-form`, { variables });
      state.selected = null;
      $("task").replaceChildren(el("p", { id: "done", text: "Done: the task is completed." }));
      await refresh();
    } catch (err) {
      error.textContent = err.message;
    }
  };
  if (!schema) {
    if (formKey) box.append(el("p", { text: `This task's form is its application's: ${formKey}` }));
    box.append(el("button", { type: "button", id: "complete", text: "Complete",
      onclick: () => submit({}) }));
    return;
  }
  const data = {};
  for (const [name, typed] of Object.entries(values || {})) data[name] = typed.value;
  const form = new window.FormViewer.Form({ container: box });
  await form.importSchema(schema, data);
  form.on("submit", (event) => {
    if (Object.keys(event.errors || {}).length) {
      error.textContent = "Please correct the marked fields.";
      return;
    }
    error.textContent = "";
    submit(event.data);
  });
  box.append(el("button", { type: "button", id: "complete", text: "Complete",
    onclick: () => form.submit() }));
}

// The instance's diagram (the vendored bpmn-js viewer of the cockpit), the task's element
// marked. Names in the diagram are SVG text: bpmn-js never renders them as markup.
async function showDiagram(taskId, where) {
  const box = where.querySelector("#diagram");
  let found;
  try {
    found = await call("GET", `/tasklist/api/task/${encodeURIComponent(taskId)}/diagram`);
  } catch {
    where.remove();
    return;
  }
  if (!found.xml || !window.BpmnJS || state.selected !== taskId) {
    where.remove();
    return;
  }
  const viewer = new window.BpmnJS({ container: box });
  try {
    await viewer.importXML(found.xml);
  } catch {
    where.remove();
    return;
  }
  const canvas = viewer.get("canvas");
  canvas.zoom("fit-viewport", "auto");
  if (viewer.get("elementRegistry").get(found.activityId)) {
    canvas.addMarker(found.activityId, "tl-current");
  }
  box.dataset.current = found.activityId;
  box.dataset.loaded = "true";
  // a rotated phone or a resized window: fit the diagram to its new box
  const refit = () => {
    if (!box.isConnected) return window.removeEventListener("resize", refit);
    canvas.resized();
    canvas.zoom("fit-viewport", "auto");
  };
  window.addEventListener("resize", refit);
}

// Start a process from its start form: the processes the user may start (the server
// decides: candidate starters), the form rendered with form-js, submitted with submit-form
// (checked again on the server).
$("start").addEventListener("click", async () => {
  state.selected = null;
  const pane = $("task");
  let found;
  try {
    found = await call("GET", "/tasklist/api/start");
  } catch (err) {
    pane.replaceChildren(el("p", { class: "error", role: "alert", text: err.message }));
    return;
  }
  const list = el("ul", { id: "startable", class: "startable" }, ...found.map((d) => el("li", {},
    el("button", { type: "button", "data-definition": d.id, onclick: () => startForm(d),
      text: d.name }))));
  pane.replaceChildren(el("h2", { text: "Start a process" }),
    found.length ? list : el("p", { class: "empty", text: "There is no process you may start." }));
});

async function startForm(definition) {
  const pane = $("task");
  const error = el("p", { class: "error", id: "form-error", role: "alert" });
  const box = el("div", { id: "form" });
  pane.replaceChildren(el("h2", { id: "start-name", text: definition.name }), box, error);
  let schema;
  try {
    ({ schema } = await call("GET",
      `/tasklist/api/process-definition/${encodeURIComponent(definition.id)}/form`));
  } catch (err) {
    error.textContent = err.message;
    return;
  }
  const submit = async (data) => {
    const variables = {};
    for (const [name, value] of Object.entries(data)) variables[name] = { value };
    try {
      const made = await rest("POST",
        `/process-definition/${encodeURIComponent(definition.id)}/submit-form`, { variables });
      pane.replaceChildren(el("p", { id: "started",
        text: `Started ${definition.name}: instance ${made.id}.` }));
      await refresh();
    } catch (err) {
      error.textContent = err.message;
    }
  };
  if (!schema) {
    box.append(el("button", { type: "button", id: "start-submit", text: "Start",
      onclick: () => submit({}) }));
    return;
  }
  const form = new window.FormViewer.Form({ container: box });
  await form.importSchema(schema, {});
  form.on("submit", (event) => {
    if (Object.keys(event.errors || {}).length) {
      error.textContent = "Please correct the marked fields.";
      return;
    }
    error.textContent = "";
    submit(event.data);
  });
  box.append(el("button", { type: "button", id: "start-submit", text: "Start",
    onclick: () => form.submit() }));
}

function comments(task) {
  const list = el("ul", { id: "comments" });
  const input = el("input", { id: "comment-text", "aria-label": "Comment", maxlength: "4000" });
  const load = async () => {
    const found = await rest("GET", `/task/${task.id}/comment`);
    list.replaceChildren(...found.map((c) => el("li", { text: `${c.userId}: ${c.message}` })));
  };
  const add = el("form", { onsubmit: async (event) => {
    event.preventDefault();
    if (!input.value.trim()) return;
    await rest("POST", `/task/${task.id}/comment/create`, { message: input.value });
    input.value = "";
    await load();
  } }, input, el("button", { type: "submit", text: "Add comment" }));
  load();
  return el("section", { class: "comments" }, el("h3", { text: "Comments" }), list, add);
}

boot();
