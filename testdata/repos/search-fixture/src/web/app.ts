// console.log("in a comment")
const label = "console.log(not a call)";

export function greet(needle: string): void {
  console.log("hello", needle);
}
