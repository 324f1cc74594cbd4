// node --import ./test/register.mjs: lets node's test runner import the web
// app's TypeScript modules (see ts-hooks.mjs).
import { register } from 'node:module';

register('./ts-hooks.mjs', import.meta.url);
