// The status page's entry: the live state and the page over it.
import { render } from 'preact';
import { App } from './app.js';
import { Live } from './live.js';

const live = new Live('events');
live.connect();
const root = document.getElementById('app');
if (root !== null) render(<App live={live} />, root);
