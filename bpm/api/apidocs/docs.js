// Starts whichever viewer the page loaded (Swagger UI on /docs, Redoc on /redoc) on the
// API's own /openapi.json. A file, not an inline script: the pages' CSP allows no inline
// script.
(function () {
  "use strict";
  var swagger = document.getElementById("swagger-ui");
  if (swagger && window.SwaggerUIBundle) {
    window.ui = window.SwaggerUIBundle({
      url: swagger.dataset.spec,
      dom_id: "#swagger-ui",
      deepLinking: true,
      showExtensions: true,
      showCommonExtensions: true,
    });
  }
  var redoc = document.getElementById("redoc");
  if (redoc && window.Redoc) {
    window.Redoc.init(redoc.dataset.spec, { disableSearch: false }, redoc);
  }
})();
