// Plain JavaScript only: htmx does the requests; this file only adds small conveniences.
// Loaded as a file (never inline) so the Content Security Policy can forbid inline script.
(function () {
  "use strict";
})();
