"""report.html shows each pick's DeepSpeed config as the study evaluated it: a hand-edited configs/knee.json (kept
by the report, which writes the pick beside it as knee.new.*) stood under the page's own figures with another ZeRO
stage, headed by a second file that held something else (trial76 #4)."""

import json
import re
import shutil

from tests.cli import autotune_main


def test_an_edited_pick_config_is_named_and_the_study_s_config_shown(simulated_run, tmp_path):
    run_dir = shutil.copytree(simulated_run, tmp_path / "run")
    config = run_dir / "configs" / "knee.json"
    evaluated = json.loads(config.read_text())
    stage = evaluated["zero_optimization"]["stage"]
    config.write_text(json.dumps({**evaluated, "zero_optimization": {"stage": (stage + 1) % 4}}, indent=2))
    reported = autotune_main("report", run_dir, "--html")
    assert reported.returncode == 0, reported.stderr
    html = (run_dir / "report.html").read_text()
    blocks = dict(re.findall(r"<p>DeepSpeed config: (.*?)</p>\n<pre>(.*?)</pre>", html, re.S))
    (heading,) = [heading for heading in blocks if "knee" in heading]
    assert '<a href="configs/knee.new.json">configs/knee.new.json</a>' in heading and 'href="configs/knee.json"' not in heading
    assert heading.endswith("(<code>configs/knee.json</code> differs from what autotune wrote there: edited, and kept "
                            "as it is; not shown)"), heading
    assert f"&quot;stage&quot;: {stage}," in blocks[heading]  # the study's, as knee.new.json holds it
    assert json.loads((run_dir / "configs" / "knee.new.json").read_text())["zero_optimization"]["stage"] == stage


def test_report_md_names_the_study_s_file_of_an_edited_pick(simulated_run, tmp_path):
    """report.md pointed at the edited configs/<pick>.json too (trial76 #4)."""
    run_dir = shutil.copytree(simulated_run, tmp_path / "run")
    config = run_dir / "configs" / "fastest.json"  # fastest's line comes first: its trial's notes are said there
    config.write_text(json.dumps({**json.loads(config.read_text()), "gradient_clipping": 0.5}, indent=2))
    assert autotune_main("report", run_dir).returncode == 0  # writes fastest.new.*, keeps the edit
    markdown = autotune_main("report", run_dir, "--format", "md")
    assert markdown.returncode == 0, markdown.stderr
    assert ("deploying it needs, beyond its DeepSpeed config (configs/fastest.new.json; configs/fastest.json is edited, "
            "kept as it is, and not the study's):") in markdown.stdout, markdown.stdout
