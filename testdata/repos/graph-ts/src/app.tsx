import { format, Logger } from './util';

export function App() {
  const l = new Logger();
  l.log('render');
  return <div>{format(1)}</div>;
}
