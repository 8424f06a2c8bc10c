/** Format a number for display. */
export function format(x: number): string {
  return x.toFixed(2);
}

export class Logger {
  log(msg: string): void {
    this.write(format(msg.length));
  }

  write(line: string): void {
    console.log(line);
  }
}

export interface Sink {
  write(line: string): void;
}
