"""The cockpit: its static pages (``static/``, bpmn-js vendored under ``static/vendor``) and
the automatic diagram layout for models that carry no diagram information."""
