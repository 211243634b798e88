"""Report rendering: the answer, headline findings, report.md/html, figures, LaTeX tables."""
