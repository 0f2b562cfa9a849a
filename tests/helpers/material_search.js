// Material for MkDocs' search worker, run in node as a browser runs it for the served site:
//   node material_search.js WORKER_JS SEARCH_INDEX_JSON QUERY
// sends the worker the index (its setup message) and the query, and prints the result groups as JSON:
// [[{location, title}, ...], ...], best first (a group: a page's sections that matched).
const fs = require("fs");

const [worker, index, query] = process.argv.slice(2);
const listeners = [];
const replies = [];
globalThis.self = globalThis;
globalThis.addEventListener = (type, listener) => listeners.push(listener);
globalThis.postMessage = (message) => replies.push(message);
(0, eval)(fs.readFileSync(worker, "utf8"));

const send = async (message) => {
  for (const listener of listeners) await listener({ data: message });
  await new Promise((resolve) => setImmediate(resolve));
};

(async () => {
  const data = JSON.parse(fs.readFileSync(index, "utf8"));
  await send({ type: 0, data: { ...data, options: { suggest: false } } }); // SETUP, as the page sends it
  await send({ type: 2, data: query }); // QUERY
  const result = replies.find((message) => message.type === 3); // RESULT
  if (!result) throw new Error("the worker gave no result");
  console.log(JSON.stringify(result.data.items.map((group) => group.map((doc) => ({ location: doc.location, title: doc.title })))));
})();
