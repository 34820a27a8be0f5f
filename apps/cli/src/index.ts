export { demo } from "./commands/demo.js";
export { formatEvent, summarize } from "./render.js";
