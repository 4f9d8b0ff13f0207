"""What the command line shows, built from results and never deciding a verdict.

terminal (consoles and progress lines), tables (the configuration line, trace tables, summaries,
the manifest and gate tables), tablefit (wide tables stacked in panels to fit the console),
statefields and changes (every field of a state, and what each step changed: ``--verbose``),
json_form (results in their JSON form: ``--json``), sequence (message sequences rebuilt from a
trace), html_report (``report``'s page), graph_export (``graph``: DOT, GraphML, JSON) and junit
(JUnit XML of ``gate`` and ``conform``). Renderers import no other room of the command line, so a
command's choices never leak into how a result looks.
"""
