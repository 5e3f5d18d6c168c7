// The one function the fixture project's test calls.
exports.greet = (name) => `hello, ${name}`;
