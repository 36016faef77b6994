"""The settings saved with each template (config.LearnSettings): the thresholds learning read and those extraction
reads when it applies the template are the template's, not config.py's of the day it is applied."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from sitegen import feed_pages, guide_pages
from store import templates as template_store
from templater import pipeline
from templater.config import LearnSettings
from templater.extract import CompiledTemplate, extract_page
from templater.template import learn_template

FIXTURE = Path(__file__).parent / "fixtures" / "templates_v1.db"



def nested_guide(count: int):
    return guide_pages(count, colophon=True, nested=True)


# (site's pages, a threshold read at extraction, a value that changes what the site's template keeps)
CHANGES = [(guide_pages, "region_min_share", 1.01), (nested_guide, "shape_max_link_density", 1.0),
           (feed_pages, "own_content_gap", 100), (feed_pages, "paragraph_chars", 1000)]


def texts(segs, template) -> list[str]:
    compiled = CompiledTemplate(template)
    return [extract_page(seg, compiled).text for seg in segs]


@pytest.mark.parametrize(("make", "name", "value"), CHANGES)
def test_a_template_learned_with_other_values_extracts_with_them(make, name, value):
    segs = [seg for seg, _ in make(8)]
    default = learn_template(segs, site="s/")
    other = learn_template(segs, site="s/", settings=dataclasses.replace(LearnSettings(), **{name: value}))
    assert getattr(other.settings, name) == value and default.settings == LearnSettings()
    assert texts(segs, other) != texts(segs, default)
    # the same rules saved with the other value extract otherwise: extraction reads the template's value
    assert texts(segs, dataclasses.replace(default, settings=other.settings)) != texts(segs, default)


@pytest.mark.parametrize(("make", "name", "value"), CHANGES[:2])
def test_the_store_keeps_a_templates_settings_and_extraction_reads_them_back(make, name, value, tmp_path):
    segs = [seg for seg, _ in make(8)]
    settings = dataclasses.replace(LearnSettings(), **{name: value})
    template = learn_template(segs, site="s/", settings=settings)
    db = pipeline.open_store(tmp_path / "t.db")
    template_store.save_template(db, template, group_key="s/", layout_shapes=np.zeros(0, dtype=np.uint32))
    loaded = pipeline.TemplateIndex(db).compiled("s/")
    assert loaded.settings == settings
    assert [extract_page(seg, loaded).text for seg in segs] == texts(segs, template)
    # the same rules with other settings are a new version (they extract otherwise)
    _, written = template_store.save_template(db, dataclasses.replace(template, settings=LearnSettings()),
                                              group_key="s/", layout_shapes=np.zeros(0, dtype=np.uint32))
    assert written and pipeline.TemplateIndex(db).compiled("s/").settings == LearnSettings()
    _, written = template_store.save_template(db, dataclasses.replace(template, settings=LearnSettings()),
                                              group_key="s/", layout_shapes=np.zeros(0, dtype=np.uint32))
    assert not written


def test_an_old_store_gets_the_settings_its_templates_were_applied_with_and_extracts_as_before(tmp_path):
    """tests/fixtures/templates_v1.db (tests/fixtures/make_templates_v1.py, the code of 3cf8f85): templates saved
    without the extraction thresholds, and the extractions that code made with them."""
    db_file = tmp_path / "old.db"
    shutil.copy(FIXTURE, db_file)
    conn = sqlite3.connect(db_file)
    before = dict(conn.execute("SELECT page_id, text FROM extractions"))
    old = [json.loads(s) for (s,) in conn.execute("SELECT settings FROM templates")]
    conn.close()
    assert old and all("wrapper_depth" not in s for s in old)
    db = pipeline.open_store(db_file)  # migration 2 of the templates component
    saved = [json.loads(s) for (s,) in db.execute("SELECT settings FROM templates")]
    assert all(s == template_store.V2_SETTINGS for s in saved)
    assert set(template_store.V2_SETTINGS) == {f.name for f in dataclasses.fields(LearnSettings)}
    again = {r.id: r.text for r in pipeline.iter_crawl_extractions(db, sorted(before))}
    assert again == before
    assert {r.template for r in pipeline.iter_crawl_extractions(db, sorted(before))} >= {"guide.example.com/book/@v1"}
