#!/usr/bin/env node
// `npm run lab`: virtual machines behind IPMI BMCs next to the stack `npm start` runs.
import { runLab } from './lab-command.js';

runLab(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: Error) => {
    process.stderr.write(`lab: ${error.message ?? error}\n`);
    process.exit(1);
  },
);
