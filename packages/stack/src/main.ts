#!/usr/bin/env node
import { runStackCommand } from './supervisor.js';

runStackCommand(process.argv.slice(2));
