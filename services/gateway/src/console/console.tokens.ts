/** Injection tokens of the console module. */
export const CONSOLE_ASSETS = Symbol('CONSOLE_ASSETS');
export const CONSOLE_SETTINGS = Symbol('CONSOLE_SETTINGS');
