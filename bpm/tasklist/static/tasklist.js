// The task list: signs in, lists the user's and their groups' tasks, claims, renders the
// task's form with form-js and submits it. Every value from a model, a variable or a user is
// put in the page as text (textContent), never as markup; the server checks everything again.

const state = { user: null, csrf: null, list: "mine", selected: null };
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
    await refresh();
  } catch (err) {
    $("sign-in-error").textContent = err.status === 429 ? err.message : "Wrong user or password";
  }
});

$("sign-out").addEventListener("click", async () => {
  await call("DELETE", "/tasklist/api/session");
  state.user = state.csrf = state.selected = null;
  $("tasks").replaceChildren();
  $("task").replaceChildren();
  show(false);
});

for (const button of document.querySelectorAll("[data-list]")) {
  button.addEventListener("click", async () => {
    state.list = button.dataset.list;
    for (const b of document.querySelectorAll("[data-list]")) {
      b.setAttribute("aria-pressed", String(b === button));
    }
    await refresh();
  });
}

async function refresh() {
  const me = encodeURIComponent(state.user);
  const query = state.list === "mine"
    ? `assignee=${me}&sortBy=created&sortOrder=desc`
    : `candidateUser=${me}&sortBy=created&sortOrder=desc`;
  const tasks = await rest("GET", `/task?${query}&maxResults=200`);
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
  pane.replaceChildren(
    el("h2", { id: "task-name", text: task.name || task.taskDefinitionKey }),
    el("p", { class: "meta", text: task.description || "" }),
    actions, formBox, error, comments(task));
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
