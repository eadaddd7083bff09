"""The names of the files layerpick writes and reads back, one constant each."""

METADATA_FILE = "layerpick.json"  # beside an export's weights; also what marks a folder as a layerpick export
REPORT_FILE = "report.json"  # a select report
VALIDATION_FILE = "validation.json"  # a validate result
RUN_FILE = "run.json"  # the stage ledger of a `layerpick run` folder
BENCH_FILE = "bench.json"  # a `layerpick run` folder's bench result
RUN_REPORT_TEXT = "report.md"  # a `layerpick run` folder's report, written before its page
RUN_REPORT_PAGE = "report.html"  # ... and its page, the last file a run writes
