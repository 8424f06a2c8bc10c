// format is also defined here: a second definition of the same name.
function format(x) {
  return String(x);
}

function run() {
  return format(3);
}

module.exports = { run };
